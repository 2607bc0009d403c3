"""The process supervisor behind run_stack: one child dying stops the rest; stubborn children
are killed after the grace period; a stop request ends everything with status 0."""
import io
import signal
import sys
import threading
import time

from gogh_web.supervisor import Service, Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
STUBBORN = [
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)",
]


def test_one_child_exiting_stops_the_others():
    out = io.StringIO()
    supervisor = Supervisor(
        [Service("sleeper", SLEEPER), Service("crasher", [sys.executable, "-c", "import sys; sys.exit(3)"])],
        grace_s=5,
        out=out,
    )
    assert supervisor.run() == 3
    assert all(proc.poll() is not None for proc in supervisor.procs.values())
    assert "crasher exited with status 3" in out.getvalue()


def test_stubborn_child_is_killed_after_grace():
    out = io.StringIO()
    supervisor = Supervisor([Service("stubborn", STUBBORN)], grace_s=0.5, out=out)
    threading.Timer(1.5, lambda: signal.raise_signal(signal.SIGTERM)).start()
    started = time.monotonic()
    assert supervisor.run() == 0
    assert time.monotonic() - started < 10
    assert supervisor.procs["stubborn"].returncode == -signal.SIGKILL
    assert "killing it" in out.getvalue() and "stubborn | up" in out.getvalue()


def test_a_service_waits_for_its_url_and_stops_first():
    import http.server
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    servers = []

    def serve():  # nothing listens on the port for the first second
        servers.append(http.server.HTTPServer(("127.0.0.1", port), http.server.BaseHTTPRequestHandler))
        servers[0].serve_forever()

    threading.Timer(1.0, serve).start()
    started = time.monotonic()
    out = io.StringIO()
    supervisor = Supervisor(
        [Service("web", SLEEPER), Service("agent", SLEEPER, env={"X": "1"}, after_url=f"http://127.0.0.1:{port}/")],
        grace_s=5,
        out=out,
    )
    threading.Timer(2.5, lambda: signal.raise_signal(signal.SIGTERM)).start()
    try:
        assert supervisor.run() == 0
    finally:
        servers[0].shutdown()
    assert supervisor.procs["agent"].args == SLEEPER and time.monotonic() - started > 2
    lines = out.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines if line.startswith("[stack] st")] == [
        "[stack] started web", "[stack] started agent", "[stack] stopping agent", "[stack] stopping web",
    ]
