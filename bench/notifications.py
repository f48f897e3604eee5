"""Does a webhook fan-out slow grading? (beside bench/grading.py, which it reuses)

    .venv/bin/python bench/notifications.py                  # 4 graders, 10 s a round
    .venv/bin/python bench/notifications.py --graders 8 --notifications 100 --delay 0.2

Sets up as bench/grading.py does (a fresh PostgreSQL database, gunicorn with the
production settings, one Celery worker on the bench's queue, recompute="worker"), starts
a webhook receiver on 127.0.0.1 that answers every POST after `--delay` seconds, and runs
grading rounds of the combined flow: a warm-up, one alone, one while `--notifications`
notifications of the team go out, each to the team's webhook (notifications.services.notify:
the deliveries are Celery tasks on the same queue and worker as the recompute). It prints
both rounds' grade p50/p95 and how many deliveries were sent, and when.
Loopback is opened in the outbound policy (OUTBOUND_DENY_NETWORKS) for the receiver only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import grading
from _support import bench_database, bench_redis

ROOT = grading.ROOT
PYTHON = grading.PYTHON


def receiver(delay: float) -> tuple[ThreadingHTTPServer, list[float]]:
    hits: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(delay)
            hits.append(time.monotonic())
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, hits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graders", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--notifications", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.2, help="the receiver's answer time")
    parser.add_argument("--server-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default=bench_database("notifications"))
    parser.add_argument("--redis", default=bench_redis("redis://127.0.0.1:6379/14"))
    args = parser.parse_args()

    queue = f"bench-notifications-{os.getpid()}"
    env = grading.fresh_database_env(server_url=args.server_url, database=args.database,
                                     queue=queue, redis=args.redis)
    env["OUTBOUND_DENY_NETWORKS"] = "169.254.0.0/16"
    full_env = {**os.environ, **env}
    processes: list[subprocess.Popen] = []
    server, hits = receiver(args.delay)
    try:
        subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT,
                       env=full_env, check=True)
        grading.setup_django(env)
        from notifications.models import Event, WebhookDelivery
        from notifications.services import notify, webhook_create
        from searchtweak.models import Team

        team_id, keys = grading.seed(args.graders)
        host, port_number = server.server_address[:2]
        webhook_create(team=Team.objects.get(pk=team_id), created_by=None,
                       url=f"http://{host}:{port_number}/hook", events=[Event.RUN_REGRESSED])
        port = grading.free_port()
        base = f"http://127.0.0.1:{port}"
        processes.append(subprocess.Popen(
            [str(Path(PYTHON).parent / "gunicorn"), "searchtweak.wsgi:application",
             "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
             "--log-level", "warning"], cwd=ROOT, env=full_env, stdout=subprocess.DEVNULL,
            start_new_session=True))
        processes.append(subprocess.Popen(
            [str(Path(PYTHON).parent / "celery"), "-A", "searchtweak", "worker",
             "--queues", queue, "--concurrency", "1", "--loglevel", "WARNING",
             "--hostname", f"{queue}@%h"], cwd=ROOT, env=full_env, start_new_session=True))
        grading.wait_for(f"{base}/healthz")
        print(f"# notifications benchmark: {args.graders} graders, {args.seconds:g} s a "
              f"round, {args.notifications} webhook notifications to a receiver answering "
              f"in {1000 * args.delay:.0f} ms, one Celery worker", flush=True)
        rows = {}
        # The first round warms the server (connections, plans): measured, not compared.
        for label in ("warm-up", "alone", "fan-out"):
            evaluation_id = grading.seed_evaluation(
                team_id, keywords=max(200, int(args.seconds * 200)), positions=10, strategy=1)
            began = time.monotonic()
            if label == "fan-out":
                for n in range(args.notifications):
                    notify(team_id=team_id, event=Event.RUN_REGRESSED,
                           text=f"bench notification {n}")
            rows[label] = grading.run_round(base, keys, args.graders, evaluation_id,
                                            args.seconds, "combined")
            row = rows[label]
            print(f"{label:>8}  grades/s={row['grades_per_s']:>7}  "
                  f"grade p50={row['grade_p50_ms']:>6} ms  p95={row['grade_p95_ms']:>6} ms  "
                  f"errors={row['errors']}", flush=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and WebhookDelivery.objects.filter(
                status="pending").exists():
            time.sleep(0.5)
        sent = WebhookDelivery.objects.filter(status="sent").count()
        last = f"{max(hits) - began:.1f} s" if hits else "never"
        print(f"# deliveries: {sent} of {args.notifications} sent; the last one reached "
              f"the receiver {last} after the fan-out began", flush=True)
        return 0 if sent == args.notifications else 1
    finally:
        server.shutdown()
        grading.bench_cleanup(processes, server_url=args.server_url, database=args.database,
                              redis_url=args.redis, queue=queue)


if __name__ == "__main__":
    sys.exit(main())
