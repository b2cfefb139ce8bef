"""``sitemap-updater send``: events from files onto the ingest queue, failures reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sitemap_updater.adapters.queues import MAX_BATCH_BYTES
from sitemap_updater.cli import main
from sitemap_updater.local.feeder import MessageBody, read_paths
from sitemap_updater.ops.progress import Progress
from sitemap_updater.ops.resolve import Deployment
from sitemap_updater.ops.send import MAX_MESSAGE_BYTES, send_bodies
from tests.integration.conftest import STACK, publish, site_entries
from tests.pipeline import Pipeline

EVENTS = Path(__file__).parents[2] / "events"


def test_send_puts_the_sample_events_on_the_ingest_queue_and_the_pipeline_serves_them(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["send", str(EVENTS), *STACK, "--json"]) == 0
    out = capsys.readouterr().out.splitlines()
    summary = json.loads(out[-1])
    assert summary["failed"] == []
    assert summary["queue_url"] == deployed.stack.queues["ingest"].url
    assert out[-2].startswith(f"send: {summary['sent']} of {summary['sent']} event(s) sent to ")
    assert summary["sent"] == len(read_paths([EVENTS]))
    deployed.drain()
    entries = site_entries(deployed.objects())
    assert entries
    assert all(url.startswith("https://www.example.com/") for url in entries)
    assert len(deployed.dead_letters()) == 3  # events/90-rejected-examples.jsonl


def test_send_sends_json_lines_as_written(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [json.dumps(publish(f"/{n}", 1)) for n in range(23)] + ["{not json"]
    source = tmp_path / "events.jsonl"
    source.write_text("\n".join(lines) + "\n")
    assert (
        main(["send", str(source), "--ingest-queue-url", deployed.stack.queues["ingest"].url]) == 0
    )
    assert "24 of 24 event(s) sent" in capsys.readouterr().out
    deployed.drain()
    assert len(site_entries(deployed.objects())) == 23
    (letter,) = deployed.dead_letters()
    assert letter["Body"] == "{not json"


def test_a_file_with_no_events_is_a_usage_error(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["send", str(empty), *STACK]) == 2
    assert "no events" in capsys.readouterr().err


class RefusingSqs:
    """SendMessageBatch that refuses every entry whose body contains "bad"."""

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(Entries)
        return {
            "Successful": [{"Id": e["Id"]} for e in Entries if "bad" not in e["MessageBody"]],
            "Failed": [
                {
                    "Id": e["Id"],
                    "Code": "InvalidMessageContents",
                    "Message": "no",
                    "SenderFault": True,
                }
                for e in Entries
                if "bad" in e["MessageBody"]
            ],
        }


def test_each_refused_entry_is_reported_with_its_origin() -> None:
    bodies = [MessageBody("ok" if n != 12 else "bad", f"f:{n}") for n in range(15)]
    sqs = RefusingSqs()
    result = send_bodies(sqs, "q", bodies, Progress("send", enabled=False))  # type: ignore[arg-type]
    assert [len(call) for call in sqs.calls] == [10, 5]
    assert result.sent == 14
    assert [(f.origin, f.code) for f in result.failed] == [("f:12", "InvalidMessageContents")]


def test_batches_hold_ten_bodies_and_at_most_the_batch_payload_limit() -> None:
    def requests(bodies: list[MessageBody]) -> list[list[str]]:
        sqs = RefusingSqs()
        send_bodies(sqs, "q", bodies, Progress("send", enabled=False))  # type: ignore[arg-type]
        return [[entry["MessageBody"][:1] for entry in call] for call in sqs.calls]

    half = MAX_BATCH_BYTES // 2
    bodies = [MessageBody("a" * half, "a"), MessageBody("b" * half, "b"), MessageBody("c", "c")]
    assert requests(bodies) == [["a", "b"], ["c"]]
    small = [MessageBody("z", str(n)) for n in range(21)]
    assert [len(call) for call in requests(small)] == [10, 10, 1]


def test_a_body_over_the_message_limit_is_listed_and_the_rest_is_sent(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = json.dumps({**publish("/huge", 1), "pad": "x" * MAX_MESSAGE_BYTES})
    source = tmp_path / "events.jsonl"
    source.write_text(
        "\n".join([json.dumps(publish("/a", 1)), huge, json.dumps(publish("/b", 1))]) + "\n"
    )
    status = main(["send", str(source), *STACK, "--json"])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert out[0].startswith(f"failed {source}:2: MessageTooLong: ")
    assert "2 of 3 event(s) sent" in out[-2]
    summary = json.loads(out[-1])
    assert (summary["sent"], [f["origin"] for f in summary["failed"]]) == (2, [f"{source}:2"])
    deployed.drain()
    assert set(site_entries(deployed.objects())) == {
        "https://www.example.com/a",
        "https://www.example.com/b",
    }


class RequestRefusingSqs:
    """SendMessageBatch that refuses a whole request holding a body containing "bad"."""

    def __init__(self, code: str = "InvalidParameterValue") -> None:
        self.code = code
        self.calls = 0

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        if any("bad" in e["MessageBody"] for e in Entries):
            raise ClientError(
                {"Error": {"Code": self.code, "Message": "refused"}}, "SendMessageBatch"
            )
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


def test_a_request_sqs_refuses_whole_fails_its_entries_and_the_rest_is_sent() -> None:
    bodies = [MessageBody("ok" if n != 3 else "bad", f"f:{n}") for n in range(25)]
    result = send_bodies(
        RequestRefusingSqs(),  # type: ignore[arg-type]
        "q",
        bodies,
        Progress("send", enabled=False),
    )
    assert result.sent == 15
    assert [f.origin for f in result.failed] == [f"f:{n}" for n in range(10)]
    assert {f.code for f in result.failed} == {"InvalidParameterValue"}
    assert (result.not_sent, result.stopped) == (0, None)


def test_an_error_about_the_queue_stops_sending_and_counts_the_rest() -> None:
    sqs = RequestRefusingSqs("AWS.SimpleQueueService.NonExistentQueue")
    bodies = [MessageBody("bad", f"f:{n}") for n in range(25)]
    result = send_bodies(sqs, "q", bodies, Progress("send", enabled=False))  # type: ignore[arg-type]
    assert sqs.calls == 1
    assert (len(result.failed), result.not_sent) == (0, 25)
    assert result.stopped == "AWS.SimpleQueueService.NonExistentQueue: refused"


def test_send_to_a_missing_queue_counts_every_event_once(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "events.jsonl"
    source.write_text("".join(json.dumps(publish(f"/{n}", 1)) + "\n" for n in range(6)))
    missing = deployed.stack.queues["ingest"].url + "-missing"
    assert main(["send", str(source), "--ingest-queue-url", missing, "--json"]) == 1
    *lines, summary = capsys.readouterr().out.splitlines()
    assert (json.loads(summary)["sent"], json.loads(summary)["not_sent"]) == (0, 6)
    assert lines[0].startswith("stopped: AWS.SimpleQueueService.NonExistentQueue: ")
    assert lines[0].endswith("; 6 event(s) not sent")
    assert lines[1].endswith("in 0 batch(es); 0 failed, 6 not sent")


def test_ctrl_c_stops_sending_with_the_summary_of_what_was_sent(
    deployed: Pipeline,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = tmp_path / "events.jsonl"
    source.write_text("".join(json.dumps(publish(f"/{n}", 1)) + "\n" for n in range(25)))
    real = deployed.sqs
    calls: list[int] = []

    class Interrupted:
        def send_message_batch(self, **kwargs: Any) -> Any:
            calls.append(len(kwargs["Entries"]))
            if len(calls) == 2:
                raise KeyboardInterrupt
            return real.send_message_batch(**kwargs)

    monkeypatch.setattr(Deployment, "sqs", property(lambda _: Interrupted()))
    status = main(["send", str(source), *STACK, "--json"])
    out = capsys.readouterr().out.splitlines()

    assert status == 130
    summary = json.loads(out[-1])
    assert (summary["sent"], summary["not_sent"], summary["interrupted"]) == (10, 15, True)
    text = "\n".join(out[:-1])
    assert "interrupted: 15 event(s) not sent" in text
    assert "10 of 25 event(s) sent" in text
    deployed.drain()
    assert len(site_entries(deployed.objects())) == 10


@pytest.mark.parametrize(
    ("command", "name"),
    [(command, name) for command in ("build", "backfill") for name in ("pages.csv", "pages.jsonl")]
    + [("send", "pages.jsonl")],  # send refuses a .csv by name
)
def test_a_file_in_windows_1252_is_the_same_one_line_everywhere(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, name: str
) -> None:
    source = tmp_path / name
    page = {"type": "publish", "url": "https://www.example.com/köln", "version": 1}
    text = (
        f"url\n{page['url']}\n" if name.endswith(".csv") else json.dumps(page, ensure_ascii=False)
    )
    source.write_bytes(text.encode("cp1252"))
    where = ["--site-url", "https://www.example.com", "--out", str(tmp_path / "out")]
    assert main([command, str(source), *(where if command == "build" else STACK)]) == 2
    line = 2 if name.endswith(".csv") else 1
    assert capsys.readouterr().err == (
        f"sitemap-updater: error: {source} is not UTF-8 (line {line}: byte 0xF6): save it as "
        "UTF-8 (in Excel: CSV UTF-8)\n"
    )
    assert deployed.dead_letters() == []


def big_event(path: str) -> str:
    """A valid event of ~230 KB: ten of them fit no single SendMessageBatch."""
    images = [{"loc": f"https://cdn.example.com/{'i' * 200}{n}"} for n in range(1000)]
    return json.dumps({**publish(path, 1), "images": images})


def test_the_local_pipeline_sends_large_events_in_batches_that_fit(deployed: Pipeline) -> None:
    bodies = [big_event(f"/big{n}") for n in range(10)]
    assert 200_000 < len(bodies[0]) < MAX_BATCH_BYTES
    assert deployed.send(bodies) == 10
    assert deployed.refused == []
    deployed.drain()
    assert len(site_entries(deployed.objects())) == 10


def test_the_local_pipeline_reports_a_body_sqs_refuses_as_a_rejected_event(
    deployed: Pipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = json.dumps({**publish("/huge", 1), "pad": "x" * MAX_MESSAGE_BYTES})
    bodies = [json.dumps(publish("/a", 1)), huge, "bad", json.dumps(publish("/b", 1))]
    real = deployed.sqs.send_message_batch

    def refusing(**kwargs: Any) -> Any:  # SQS refusing one entry of a batch
        response = RefusingSqs().send_message_batch(**kwargs)
        kept = [e for e in kwargs["Entries"] if e["MessageBody"] != "bad"]
        real(QueueUrl=kwargs["QueueUrl"], Entries=kept)
        return response

    monkeypatch.setattr(deployed.sqs, "send_message_batch", refusing)
    assert deployed.send(bodies) == 2
    assert [r.reason.split(":")[:2] for r in deployed.refused] == [
        ["not_sent", " the ingest queue refused #1"],
        ["not_sent", " the ingest queue refused #2"],
    ]
    assert "MessageTooLong" in deployed.refused[0].reason
    assert "InvalidMessageContents" in deployed.refused[1].reason
    deployed.drain()
    summary = deployed.summarise(2, tmp_path / "out")
    assert (summary.sent, summary.accepted, len(summary.rejected)) == (2, 2, 2)
    assert summary.rejected[1].event == "bad"


@pytest.mark.parametrize(
    "failure", [TimeoutError("queues did not drain within 600 s"), ConnectionError("gone")]
)
def test_a_local_run_that_fails_is_exit_1_not_a_usage_error(
    failure: Exception,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from sitemap_updater.local import runtime

    def failing(*_: object, **__: object) -> None:
        raise failure

    monkeypatch.setattr(runtime, "run_local", failing)
    events = tmp_path / "events.jsonl"
    events.write_text('{"type": "publish", "url": "https://www.example.com/a", "version": 1}\n')
    out = str(tmp_path / "site")
    assert main(["local", str(events), "--site-url", "https://www.example.com", "--out", out]) == 1
    assert capsys.readouterr().err == f"sitemap-updater: error: {failure}\n"


def test_the_summary_counts_every_dead_letter_of_a_fifo_queue(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    """SQS hands out ten messages of a FIFO group at a time, and no more while they are held:
    twelve dead-lettered index requests (one group) are twelve, not ten."""
    index = pipeline.stack.queues["index"]
    for number in range(12):
        pipeline.sqs.send_message(
            QueueUrl=index.dlq_url,
            MessageBody=json.dumps({"cause": f"pages-00001@{number}"}),
            MessageGroupId="index",
            MessageDeduplicationId=f"failed-{number}",
        )
    assert len(pipeline.dead_letters()) == 10  # what a receive can see of one group
    assert pipeline.summarise(0, tmp_path / "out").dead_lettered == 12


@pytest.mark.parametrize("command", ["build", "backfill", "send"])
def test_on_a_terminal_the_bar_shows_the_total_and_the_time_left(
    deployed: Pipeline,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # capsys's: a terminal
    source = tmp_path / "pages.jsonl"
    source.write_text("".join(json.dumps(publish(f"/{n}", 1)) + "\n" for n in range(25)))
    where = ["--site-url", "https://www.example.com", "--out", str(tmp_path / "out")]
    args = [*(where if command == "build" else STACK), "--json"]
    assert (
        main([command, str(source), *args, *(["--workers", "1"] if command == "backfill" else [])])
        == 0
    )
    out, err = capsys.readouterr()
    json.loads(out.splitlines()[-1])  # stdout: the summary alone
    assert f"\r\x1b[K{command} [" in err
    assert "/25 " in err
    assert " eta " in err
