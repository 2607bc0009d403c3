"""Allocations in the admin: the jobs sharing a GPU are listed by id, in the list and inline."""
from django.utils import timezone

from scheduler import services
from scheduler.models import Allocation


def test_a_group_of_three_shows_each_members_partners(client, root, cluster, alice, resnet50):
    jobs = [services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1).job for _ in range(3)]
    for job in jobs:
        Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now()).partners.set(set(jobs) - {job})
    listing = client.get("/admin/scheduler/allocation/")
    assert listing.status_code == 200
    assert f'<td class="field-partner_ids">{jobs[1].pk}, {jobs[2].pk}</td>' in listing.content.decode()
    change = client.get(f"/admin/scheduler/job/{jobs[0].pk}/change/")
    assert change.status_code == 200
    inline = change.content.decode().split('<td class="field-partners">', 1)[1].split("</td>", 1)[0]
    assert str(jobs[1]) in inline and str(jobs[2]) in inline and str(jobs[0]) not in inline


def test_what_a_job_is_and_whose_it_is_cannot_be_edited_in_the_admin(client, root, cluster, alice, bob, resnet50):
    """Moving a job to another tenant here bypassed the services: the old tenant's open pages
    kept it (no event told them it left) and its owner could no longer see it."""
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1).job
    page = client.get(f"/admin/scheduler/job/{job.pk}/change/").content.decode()
    for field in ("tenant", "owner", "workload", "min_throughput", "max_gpus"):
        assert f'name="{field}"' not in page, field
    assert 'name="priority"' in page


def test_the_power_limit_and_the_speed_planned_under_it_show_in_the_list_and_inline(client, root, cluster, alice,
                                                                                   resnet50):
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1).job
    Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now(), power_limit_w=210.0,
                              power_limit_speed=0.9)
    listing = client.get("/admin/scheduler/allocation/").content.decode()
    assert '<td class="field-power_limit_w">210.0</td>' in listing
    assert '<td class="field-power_limit_speed">0.900</td>' in listing
    inline = client.get(f"/admin/scheduler/job/{job.pk}/change/").content.decode()
    cells = {name: inline.split(f'class="field-{name}">', 1)[1].split("</td>", 1)[0].split() for name in
             ("power_limit_w", "power_limit_speed")}
    assert cells == {"power_limit_w": ["<p>210.0</p>"], "power_limit_speed": ["<p>0.900</p>"]}
