"""moto, made to keep up with a real site's stream in the local runtime: the same answers
(``tests/integration/test_tuned_moto.py``) in time that does not grow with the table or the
queue, and no accepted event lost under concurrent requests. The functions never import it."""

from __future__ import annotations

import functools
import importlib
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any


def tune_moto() -> None:
    """Idempotent. What moto does, and what it does here instead:

    * TransactWriteItems deep-copies every table it names to roll back: O(registry), and torn
      by concurrent writes (a rollback undid another request's commit). Here DynamoDB requests
      run under one lock, and a transaction keeps only the items it touches.
    * A Query sorts and filters the whole table. Here it reads its partition.
    * Its server lists moto's package folder for every request. Here once.
    * SQS reads every attribute (counts included) per message, a delete searches the queue
      twice, and clock readings build datetimes. Here attributes are computed when read, a
      receipt handle finds its message at once, and the clock is time.time().
    """
    from moto.dynamodb.responses import DynamoHandler  # noqa: PLC0415 - the local extra

    if not getattr(DynamoHandler.call_action, "tuned", False):
        _isolate_transactions()
        _partition_queries()
        backends: Any = importlib.import_module("moto.backends")
        backends.list_of_moto_modules = functools.cache(
            lambda listed=backends.list_of_moto_modules: tuple(listed())
        )
        _sqs_in_constant_time()


def _isolate_transactions() -> None:
    import copy  # noqa: PLC0415
    import types  # noqa: PLC0415

    from moto.dynamodb import models  # noqa: PLC0415
    from moto.dynamodb.models.dynamo_type import DynamoType  # noqa: PLC0415
    from moto.dynamodb.models.table import Table  # noqa: PLC0415
    from moto.dynamodb.responses import DynamoHandler  # noqa: PLC0415

    lock = threading.RLock()
    call_action, transact = DynamoHandler.call_action, models.DynamoDBBackend.transact_write_items

    def locked_call(self: Any) -> Any:
        with lock:
            return call_action(self)

    def kept_items(backend: Any, actions: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        kept = []
        for action in actions:
            ((kind, request),) = action.items()
            table = backend.tables.get(request.get("TableName"))
            if table is None:
                continue
            key = request["Item"] if kind == "Put" else request.get("Key", {})
            hash_key = DynamoType(key[table.hash_key_attr])
            range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            item = copy.deepcopy(table.get_item(hash_key, range_key))
            kept.append((table, hash_key, range_key, item))
        return kept

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        kept = kept_items(self, transact_items)
        try:
            transact(self, transact_items)
        except Exception:
            for table, hash_key, range_key, item in reversed(kept):
                partition = table.items if range_key is None else table.items[hash_key]
                held = hash_key if range_key is None else range_key
                if item is None:
                    partition.pop(held, None)
                else:
                    partition[held] = item
            raise

    def snapshot(value: Any, memo: Any = None) -> Any:  # the table itself: see kept_items
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    locked_call.tuned = True  # type: ignore[attr-defined]
    models.copy = types.SimpleNamespace(deepcopy=snapshot, copy=copy.copy)  # type: ignore[assignment,attr-defined]
    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    DynamoHandler.call_action = locked_call  # type: ignore[method-assign]


def _partition_queries() -> None:
    from moto.dynamodb.models.table import Table  # noqa: PLC0415

    query = Table.query

    def partition_query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name is not None or hash_key is None or not self.range_key_attr:
            return query(self, hash_key, *args, **kwargs)
        items = list(self.items.get(hash_key, {}).values())
        self.all_items = lambda: items  # for this call: DynamoDB requests run one at a time
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = partition_query  # type: ignore[method-assign]


_SQS_COUNTS = frozenset(
    {
        "approximate_number_of_messages",
        "approximate_number_of_messages_not_visible",
        "approximate_number_of_messages_delayed",
    }
)


class _WithoutCounts:
    """A queue whose message counts read 0: its other attributes, without a pass over it."""

    def __init__(self, queue: Any):
        self._queue = queue

    def __getattr__(self, name: str) -> Any:
        return 0 if name in _SQS_COUNTS else getattr(self._queue, name)


class _QueueAttributes(Mapping[str, Any]):
    """A queue's attributes, each computed when it is read."""

    def __init__(self, queue: Any, everything: Callable[[Any], dict[str, Any]]):
        self._queue, self._everything = queue, everything

    def __getitem__(self, name: str) -> Any:
        from moto.core.utils import camelcase_to_underscores  # noqa: PLC0415

        if camelcase_to_underscores(name) in _SQS_COUNTS:
            return getattr(self._queue, camelcase_to_underscores(name))
        return self._everything(_WithoutCounts(self._queue))[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._everything(self._queue))

    def __len__(self) -> int:
        return len(self._everything(self._queue))


def _sqs_in_constant_time() -> None:
    models: Any = importlib.import_module("moto.sqs.models")  # patched: typed as Any
    everything = models.Queue.attributes.fget
    by_handle: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
    mark_received = models.Message.mark_received

    def received(message: Any, *args: Any, **kwargs: Any) -> None:
        mark_received(message, *args, **kwargs)
        by_handle[message.receipt_handle] = message

    def delete_message(queue: Any, receipt_handle: str) -> None:
        if receipt_handle in queue.deleted_messages:
            return  # deleted before: as SQS, not an error
        message: Any = by_handle.get(receipt_handle)
        try:
            queue._messages.remove(message)  # by identity: a Message has no __eq__
        except ValueError:
            raise models.ReceiptHandleIsInvalid from None
        queue.pending_messages.discard(message)
        queue.deleted_messages.update(message.all_receipt_handles)

    def visible(queue: Any) -> list[Any]:
        now = time.time() * 1000
        return [m for m in queue._messages if m.visible_at < now and m.delayed_until <= now]

    def retained(backend: Any, queue_name: str, message: Any) -> bool:
        period = int(backend.get_queue(queue_name).message_retention_period)
        return bool(period + message.sent_timestamp / 1000 > time.time())

    models.unix_time = lambda dt=None: time.time()
    models.unix_time_millis = lambda dt=None: time.time() * 1000
    models.SQSBackend.is_message_valid_based_on_retention_period = retained

    models.Queue.attributes = property(lambda queue: _QueueAttributes(queue, everything))
    models.Queue.messages = property(visible)
    models.Queue.delete_message = delete_message
    models.Message.mark_received = received
