"""cfn-lint finds nothing in the template, neither errors nor warnings (``make synth`` runs it
on the real synth too). A rule is ignored only on the resources it concerns, in cfn-lint's
resource metadata, set next to the code that explains why (functions.py: W3005)."""

from __future__ import annotations

import json

from cfnlint.api import ManualArgs, lint

from tests.infra.conftest import Synthesized


def test_cfn_lint_finds_nothing(synthesized: Synthesized) -> None:
    matches = lint(json.dumps(synthesized.json), config=ManualArgs(regions=["us-east-1"]))
    assert [str(match) for match in matches] == []


def test_rules_are_ignored_only_where_explained(default: Synthesized) -> None:
    ignored = {
        (resource["Type"], rule)
        for resource in default.json["Resources"].values()
        for rule in resource.get("Metadata", {})
        .get("cfn-lint", {})
        .get("config", {})
        .get("ignore_checks", [])
    }
    assert ignored == {("AWS::Lambda::Function", "W3005")}
