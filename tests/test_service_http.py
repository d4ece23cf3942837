"""The HTTP rules every service client follows (bias.core.models.service_http): bounded waits that an
interruption ends, daemon request threads that hand back results and exceptions, answers bounded in
size and in time, and a server that trickles its answer cut off at the request's timeout."""

from __future__ import annotations

import io
import threading

import pytest

from bias.core.models import service_http
from bias.core.models.service_http import MAX_WAIT, AnswerTooLarge, Stop, backoff_wait, in_threads


def test_backoff_doubles_and_every_wait_is_capped() -> None:
    assert [backoff_wait(a, 1.0, None) for a in range(4)] == [1.0, 2.0, 4.0, 8.0]
    assert backoff_wait(40, 1.0, None) == MAX_WAIT  # no overflow, no wait beyond the cap
    assert (
        backoff_wait(0, 1.0, 3600.0) == MAX_WAIT and backoff_wait(0, 1.0, float("inf")) == MAX_WAIT
    )
    assert backoff_wait(0, 1.0, 2.5) == 2.5  # the server's Retry-After, within the cap


def test_a_stopped_wait_returns_at_once() -> None:
    stop = Stop()
    stop.set()
    assert stop.wait(MAX_WAIT) is True  # set before: no sleep at all (a timing-free check)
    assert Stop().wait(0) is False


def test_in_threads_gives_every_result_and_exception_by_index() -> None:
    def work(n: int) -> int:
        if n == 3:
            raise ValueError("three")
        return n * n

    got = dict(in_threads(work, list(range(6)), 3, Stop()))
    assert {k: v for k, v in got.items() if k != 3} == {0: 0, 1: 1, 2: 4, 4: 16, 5: 25}
    assert isinstance(got[3], ValueError)
    assert all(t.daemon for t in threading.enumerate() if t.name == "bias-service-request")


def test_leaving_early_stops_the_workers_taking_more() -> None:
    """Item 0 may finish, the others wait until the loop was left: then no worker takes a new item
    (at most the two in hand and the one a worker took after item 0)."""
    started: list[int] = []
    released = [threading.Event() for _ in range(50)]
    released[0].set()

    def work(n: int) -> int:
        started.append(n)
        released[n].wait(30)
        return n

    stop = Stop()
    results = in_threads(work, list(range(50)), 2, stop)
    first = next(results)
    results.close()  # what an interruption does to the loop
    for event in released:
        event.set()
    for thread in [t for t in threading.enumerate() if t.name == "bias-service-request"]:
        thread.join(30)
    assert first == (0, 0) and stop.is_set() and len(started) <= 3, started


def test_a_stop_set_by_the_work_ends_the_loop_without_the_items_not_started() -> None:
    """What a batch failing for good does: it sets the stop in its own thread before it returns, so
    no worker takes another item; the loop ends with the items in hand."""
    stop = Stop()

    def work(n: int) -> int:
        if n == 1:
            stop.set()
            raise ValueError("refused for good")
        return n

    seen = [i for i, _ in in_threads(work, list(range(100)), 1, stop)]
    assert seen == [0, 1]


@pytest.mark.parametrize("size", [0, 10, 2**16 + 5])
def test_a_body_within_the_limit_is_read_whole(size: int) -> None:
    body = b"x" * size
    assert service_http._read_within(io.BytesIO(body).read, size, 60) == body


def test_a_body_past_the_limit_is_refused_unread() -> None:
    stream = io.BytesIO(b"x" * (2**20))
    with pytest.raises(AnswerTooLarge):
        service_http._read_within(stream.read, 1000, 60)
    assert stream.tell() <= 1001  # not read beyond the limit


def test_a_body_that_takes_too_long_is_cut_off() -> None:
    chunks = iter([b"a", b"b", b"c"])
    with pytest.raises(TimeoutError):
        service_http._read_within(lambda n: next(chunks, b""), 100, -1.0)  # a deadline already past


def test_vector_rows_name_what_came_instead() -> None:
    from bias.core.errors import BiasError

    assert [list(r) for r in service_http.vector_rows("m", [[1, 2.5], [3, 4]], 2, 2)] == [
        [1.0, 2.5],
        [3.0, 4.0],
    ]
    for vectors, texts, words in (
        ([[1.0], [1.0, 2.0]], 2, "unequal width"),
        ([[True, 1.0]], 1, "bool"),
        ([[float("nan")]], 1, "not finite"),
        ([[1.0]], 2, "1 vector(s) for 2"),
        ({"a": 1}, 1, "dict"),
        ([[1.0] * (service_http.MAX_WIDTH + 1)], 1, "more than any"),
        ([[1.0, 2.0]], 1, "where this model gives 3"),
    ):
        with pytest.raises(BiasError) as err:
            service_http.vector_rows("m", vectors, texts, 3 if "gives 3" in words else None)
        assert words in err.value.message and err.value.exit_code == 1


def test_a_server_that_trickles_its_answer_gets_the_timeout_for_all_of_it(
    tmp_path, monkeypatch
) -> None:
    """A server sending one byte every 0.05 s (its answer would take minutes) against a timeout of
    1 s per request: each byte comes well within 1 s, so only a deadline on the whole answer stops it."""
    from bias.core.errors import BiasError
    from bias.registry import build_embedder

    from fixtures.hostile_server import Answer, HostileServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with HostileServer(Answer(body=b'{"data": [' + b" " * 4000 + b"]}", trickle=0.05)) as server:
        embedder = build_embedder(
            f"openai:m[base_url={server.url},retries=0,timeout=1,cache=false]"
        )
        with pytest.raises(BiasError) as err:
            embedder.encode(["a text"])
        assert "no answer within 1 s" in err.value.message, err.value.message
        assert server.finished == 0


@pytest.mark.parametrize(
    "spec, env",
    [
        ("completions:{url}[timeout=1]", None),  # no model: its /models list is asked for
        ("voyage:voyage-3[base_url={url},retries=0,timeout=1,cache=false]", "VOYAGE_API_KEY"),
    ],
    ids=["completions", "voyage"],
)
def test_the_urllib_and_requests_clients_also_give_a_trickle_one_deadline(
    spec, env, monkeypatch
) -> None:
    """A server trickling an answer that never ends (a byte every 0.05 s of 10 MB) against the
    clients that read with urllib (completions) and through a requests session (voyage): a read
    that waits for 64 KiB before it looks at the clock would never return. The request must end
    with its 1 s timeout; the thread's join only keeps a regression from hanging the suite."""
    import threading

    from bias.core.errors import BiasError
    from bias.registry import build_embedder

    from fixtures.hostile_server import Answer, HostileServer

    if env:
        monkeypatch.setenv(env, "pa-test")
    caught: list[BaseException] = []

    def ask(embedder) -> None:
        try:
            embedder.load() if spec.startswith("completions") else embedder.encode(["a text"])
        except BaseException as exc:  # noqa: BLE001 (checked below)
            caught.append(exc)

    with HostileServer(Answer(body=b" " * 10_000_000, trickle=0.05)) as server:
        embedder = build_embedder(spec.format(url=server.url))
        worker = threading.Thread(target=ask, args=(embedder,), daemon=True)
        worker.start()
        worker.join(300)
        assert not worker.is_alive(), "the request was still reading a trickle after 300 s"
        assert server.finished == 0
    assert caught and isinstance(caught[0], BiasError), caught
    assert "within 1 s" in caught[0].message, caught[0].message


def test_a_recorded_url_keeps_an_ipv6_hosts_brackets_and_drops_credentials() -> None:
    from bias.core.models.service_errors import public_url

    assert public_url("http://[::1]:47660/v1") == "http://[::1]:47660/v1"  # V01: was http://::1:47660
    assert public_url("https://user:pw@Example.org/v1?x=1") == "https://example.org/v1"


def test_a_completion_server_closing_mid_answer_is_a_lost_connection_not_bad_json() -> None:
    """W06c: the server announces 1,000 bytes, sends 10 and closes. The answer is said as a lost
    connection (as the openai client says it), not as an answer that is not JSON."""
    import socket
    import threading

    from bias.core.errors import BiasError
    from bias.registry import build_embedder

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        connection, _ = listener.accept()
        connection.recv(65536)
        connection.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            + b'{"data": [{'
        )
        connection.close()

    threading.Thread(target=serve, daemon=True).start()
    port = listener.getsockname()[1]
    embedder = build_embedder(f"completions:http://127.0.0.1:{port}/v1[timeout=30]")
    with pytest.raises(BiasError) as err:
        embedder.load()
    listener.close()
    assert "closed before the whole answer" in err.value.message, err.value.message


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
@pytest.mark.parametrize("kind", ["openai", "chat"])
def test_a_compressed_answer_is_refused_before_it_is_decoded(kind, encoding, monkeypatch) -> None:
    """A few kilobytes of gzip decode to gigabytes, and httpx decodes after the bytes are counted:
    the clients ask for plain answers and refuse a compressed one, whatever it holds. Here 50 MB of
    spaces in 50 kB, far past the limit once decoded."""
    import zlib

    from bias.api import GenerationRequest, Sampling
    from bias.core.errors import BiasError
    from bias.registry import build_embedder

    from fixtures.hostile_server import Answer, HostileServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    packer = zlib.compressobj(9, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
    body = packer.compress(b"{" + b" " * 50_000_000 + b"}") + packer.flush()
    assert len(body) < 100_000
    answer = Answer(body=body, headers={"Content-Encoding": encoding})
    with HostileServer(answer) as server:
        embedder = build_embedder(f"{kind}:m[base_url={server.url},retries=0,timeout=5,cache=false]")
        with pytest.raises(BiasError) as caught:
            if kind == "chat":
                embedder.generate([GenerationRequest.of("hi")], Sampling(max_tokens=4))
            else:
                embedder.encode(["a text"])
        asked = [entry.accept_encoding for entry in server.log]
    assert f"compressed ({encoding})" in caught.value.message, caught.value.message
    assert asked and set(asked) == {"identity"}, asked
