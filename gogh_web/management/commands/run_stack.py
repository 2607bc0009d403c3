"""`manage.py run_stack`: daphne, a Celery worker and Celery beat in the foreground."""
import sys

from django.core.management.base import BaseCommand

from gogh_web.supervisor import Service, Supervisor


class Command(BaseCommand):
    help = (
        "Run the control plane in the foreground: daphne (HTTP + WebSockets), one Celery worker "
        "and Celery beat. Ctrl-C (or SIGTERM) stops all three cleanly; if one dies the others stop too."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="Address daphne listens on (default 127.0.0.1).")
        parser.add_argument("--port", type=int, default=8000, help="Port daphne listens on (default 8000).")
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes (default 2).")
        parser.add_argument("--no-beat", action="store_true", help="Do not run Celery beat (another machine does).")
        parser.add_argument("--grace", type=float, default=15.0, help="Seconds to wait after SIGTERM before SIGKILL.")

    def handle(self, *args, host, port, concurrency, no_beat, grace, **options):
        python = sys.executable
        services = [
            Service("daphne", [python, "-m", "daphne", "-b", host, "-p", str(port), "gogh_web.asgi:application"]),
            Service(
                "worker",
                [python, "-m", "celery", "-A", "gogh_web", "worker", "-l", "INFO", "--concurrency", str(concurrency)],
            ),
        ]
        if not no_beat:
            services.append(Service("beat", [python, "-m", "celery", "-A", "gogh_web", "beat", "-l", "INFO"]))
        self.stdout.write(f"GOGH control plane on http://{host}:{port}/ (Ctrl-C stops everything)")
        code = Supervisor(services, grace_s=grace, out=self.stdout).run()
        if code:
            sys.exit(code)
