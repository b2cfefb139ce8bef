"""cdk-nag acknowledgements: each one names the finding and why it is accepted."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    """Accept one cdk-nag finding (``RuleId`` or ``RuleId[FindingId]``) on ``scope``."""
    Validations.of(scope).acknowledge(Acknowledgment(id=finding, reason=reason))
