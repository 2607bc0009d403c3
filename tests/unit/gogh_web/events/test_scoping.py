"""Who sees what: a user their own tenant's jobs plus the cluster-wide kinds, staff everything,
anonymous callers nothing (snapshot here, socket in test_socket.py)."""
from gogh_web.events import send_event
from gogh_web.events.models import Event
from gogh_web.events.selectors import events_after, viewer_for
from scheduler import services


def _jobs(measured, alice, bob, resnet50, committed):
    with committed():
        mine = services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1).job
        theirs = services.job_submit(owner=bob, workload=resnet50, min_throughput=1, max_gpus=1).job
    return mine, theirs


def test_snapshot_shows_a_user_their_tenant_and_staff_everything(measured, alice, bob, staff, resnet50, committed,
                                                                 client_for):
    mine, theirs = _jobs(measured, alice, bob, resnet50, committed)
    body = client_for(alice).get("/api/live/snapshot/").json()
    assert set(body["state"]["job"]) == {str(mine.pk)}
    assert body["event_id"] == Event.objects.order_by("-id").first().pk
    assert len(body["state"]["gpu"]) == 6 and len(body["state"]["node"]) == 2  # cluster-wide
    assert list(body["state"]) == [
        "job", "node", "gpu", "solve_run", "solver_config", "tenant", "service", "predictor_version",
        "gpu_type_profile"]
    assert set(client_for(staff).get("/api/live/snapshot/").json()["state"]["job"]) == {str(mine.pk), str(theirs.pk)}


def test_snapshot_refuses_anonymous_callers(db, client_for):
    assert client_for(None).get("/api/live/snapshot/").status_code == 401


def test_session_signed_in_user_gets_the_snapshot(alice, client):
    client.force_login(alice)
    assert client.get("/api/live/snapshot/").status_code == 200


def test_events_are_scoped_like_the_snapshot(measured, alice, bob, staff, make_user, resnet50, committed):
    mine, theirs = _jobs(measured, alice, bob, resnet50, committed)
    with committed():
        send_event(kind="node", key=99, data={"id": 99})
    loner = make_user("loner")  # in no tenant
    keys = {name: [(e["kind"], e["key"]) for e in events_after(viewer_for(user), 0)]
            for name, user in {"alice": alice, "staff": staff, "loner": loner}.items()}
    assert keys["alice"] == [("job", str(mine.pk)), ("node", "99")]
    assert keys["staff"] == [("job", str(mine.pk)), ("job", str(theirs.pk)), ("node", "99")]
    assert keys["loner"] == [("node", "99")]
