"""Run several long-lived processes as one: start them, stream their output, and stop all of
them cleanly when any exits or when we are told to stop (Ctrl-C, SIGTERM).

Children get their own sessions so a terminal's Ctrl-C reaches only us; we then send each
main process, last started first, a SIGTERM (warm shutdown for Celery, which stops its own
pool), wait a grace period and SIGKILL the whole process group if it is still there.
"""
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Service:
    """A process to run. `env` adds to the environment; `after_url`, when set, delays the start
    until that URL answers (node agents need the web tier up to register)."""

    name: str
    argv: list[str]
    env: dict = field(default_factory=dict)
    after_url: str | None = None


class Supervisor:
    def __init__(self, services: list[Service], grace_s: float = 15.0, env: dict | None = None, out=None):
        self.services = services
        self.grace_s = grace_s
        self.env = env
        self.out = out or sys.stdout
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.procs: dict[str, subprocess.Popen] = {}

    def run(self) -> int:
        """Start every service and block until one exits or a stop signal arrives."""
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            waiting = list(self.services)
            while not self._stop.is_set():
                while waiting and self._may_start(waiting[0]):
                    self._start(waiting.pop(0))
                exited = [(name, p.returncode) for name, p in self.procs.items() if p.poll() is not None]
                if exited:
                    name, code = exited[0]
                    self._say(f"[stack] {name} exited with status {code}; stopping the others")
                    self.stop()
                    return code or 1
                self._stop.wait(0.5)
            self.stop()
            return 0
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def stop(self) -> None:
        """Stop in reverse start order, each given the grace period: agents leave while the web
        tier still answers them, the worker finishes its task before the broker's users go."""
        for name, proc in reversed(self.procs.items()):
            if proc.poll() is not None:
                continue
            self._say(f"[stack] stopping {name} (pid {proc.pid})")
            proc.terminate()
            try:
                proc.wait(timeout=self.grace_s)
            except subprocess.TimeoutExpired:
                self._say(f"[stack] {name} ignored SIGTERM for {self.grace_s:.0f} s; killing it")
                self._kill_group(proc)
                proc.wait()
        self._say("[stack] all stopped")

    @staticmethod
    def _may_start(service: Service) -> bool:
        if service.after_url is None:
            return True
        try:
            urllib.request.urlopen(service.after_url, timeout=1)
        except urllib.error.HTTPError:
            return True  # it answered
        except OSError:
            return False
        return True

    def _start(self, service: Service) -> None:
        base = self.env if self.env is not None else os.environ
        proc = subprocess.Popen(
            service.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**base, **service.env},
            start_new_session=True,
            text=True,
            bufsize=1,
        )
        self.procs[service.name] = proc
        self._say(f"[stack] started {service.name} (pid {proc.pid}): {' '.join(service.argv)}")
        threading.Thread(target=self._pump, args=(service.name, proc), daemon=True).start()

    def _pump(self, name: str, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            self._say(f"{name:>7} | {line.rstrip()}")

    def _say(self, line: str) -> None:
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    def _on_signal(self, signum, frame) -> None:
        self._stop.set()

    @staticmethod
    def _kill_group(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
