"""The page path's messages (proxy_addon.jobs): named types in the proxy and the worker, plain tuples on the
wire between them, and a flow's state apart from its note."""

from __future__ import annotations

import pickle

import pytest
from mitmproxy.test import tflow

from proxy_addon.jobs import (
    HEADER,
    NOTE,
    STATE,
    Failed,
    FlowState,
    InSlot,
    PageJob,
    PageOrder,
    PanelJob,
    Rewritten,
    Slot,
    Untouched,
    answer_message,
    mark,
    page_message,
    panel_message,
    read_answer,
    read_order,
    state_of,
)

JOB = PageJob("text/html; charset=utf-8", "http://example.com/", "gzip", 1 << 20, 100)


def unframed(message: bytes) -> bytes:
    (size,) = HEADER.unpack_from(message)
    assert len(message) == HEADER.size + size
    return message[HEADER.size :]


@pytest.mark.parametrize("body", [b"<html>page</html>", Slot(16, 40_000, 1 << 24)])
def test_a_page_travels_to_a_worker_and_is_read_back_named(body):
    order = read_order(unframed(page_message(JOB, body)))
    assert order == PageOrder(JOB, body)
    assert type(order.job) is PageJob and type(order.body) is type(body)


def test_a_panel_to_make_ahead_travels_by_its_url():
    assert read_order(unframed(panel_message("http://example.com/a"))) == PanelJob("http://example.com/a")


@pytest.mark.parametrize(
    "answer",
    [
        Rewritten(b"<html>new</html>", 3, 2, True),
        InSlot(70_000, 3, 2, False),
        Untouched("over 100 link tags"),
        Failed("KeyError: 'a bug'"),
    ],
)
def test_an_answer_travels_back_as_the_type_it_left(answer):
    back = read_answer(unframed(answer_message(answer)))
    assert back == answer and type(back) is type(answer)


def test_the_wire_holds_only_builtin_types():
    """A named type pickled costs a look-up and a call of its class each way: the wire carries none."""
    messages = [
        page_message(JOB, Slot(0, 10, 100)),
        page_message(JOB, b"body"),
        panel_message("http://example.com/"),
        answer_message(Rewritten(b"x", 1, 1, False)),
        answer_message(InSlot(1, 1, 1, False)),
        answer_message(Untouched("why")),
        answer_message(Failed("how")),
    ]
    for message in messages:
        for opcode, _, _ in __import__("pickletools").genops(unframed(message)):
            assert opcode.name not in ("GLOBAL", "STACK_GLOBAL", "REDUCE", "NEWOBJ", "NEWOBJ_EX"), message


def test_an_answer_in_the_slot_takes_its_body_back():
    assert InSlot(3, 5, 4, True).with_body(b"abc") == Rewritten(b"abc", 5, 4, True)


def test_untouched_is_its_reason():
    untouched = Untouched("too large (over 8 MiB)")
    assert untouched.reason == "too large (over 8 MiB)" and not isinstance(untouched, str)
    assert pickle.loads(pickle.dumps(untouched)) == untouched


@pytest.mark.parametrize(
    "state, note, shown",
    [
        (FlowState.PASSED, None, "passed"),
        (FlowState.CANDIDATE, None, "candidate"),
        (FlowState.OWN_PAGE, None, "own-page"),
        (FlowState.UNTOUCHED, "untouched: over 100 link tags", "untouched: over 100 link tags"),
        (FlowState.REWRITTEN, "2 bars (1 ranked) in 1.0 ms", "2 bars (1 ranked) in 1.0 ms"),
    ],
)
def test_a_flows_state_is_kept_apart_from_its_note(state, note, shown):
    flow = tflow.tflow(resp=True)
    assert state_of(flow) is None  # not seen by the addon
    mark(flow, state, note)
    assert state_of(flow) is state and flow.metadata[STATE] == state.value
    assert flow.metadata[NOTE] == shown  # the text the log and the flow's readers have always seen


@pytest.mark.parametrize("state", list(FlowState))
def test_a_marked_flow_is_saved_and_read_back_with_its_state(state, tmp_path):
    """mitmproxy's save (``-w``, mitmweb) writes a flow's metadata only if it is plain data."""
    from mitmproxy import io

    flow = tflow.tflow(resp=True)
    mark(flow, state, "a note")
    with open(tmp_path / "flows", "wb") as out:
        io.FlowWriter(out).add(flow)
    with open(tmp_path / "flows", "rb") as saved:
        (read,) = list(io.FlowReader(saved).stream())
    assert state_of(read) is state and read.metadata[NOTE] == "a note"


def test_a_state_this_version_does_not_know_is_none():
    flow = tflow.tflow(resp=True)
    flow.metadata[STATE] = "a state of another version"
    assert state_of(flow) is None
