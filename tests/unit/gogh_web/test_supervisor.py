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
