"""The admin's number and reason displays (gogh_web.admin_display), as pure functions."""
from datetime import UTC, datetime

import pytest

from gogh_web.admin_display import clipped, figures


@pytest.mark.parametrize(("value", "shown"), [
    (4.307990192432654, "4.31"), (212.71828, "213"), (1234.5678, "1235"), (0.0123456, "0.0123"),
    (-0.5, "-0.500"), (7.0, "7.00"), (0.0, "0"), (float("inf"), "inf"),
])
def test_three_significant_figures_without_losing_integer_digits(value, shown):
    assert figures(value) == shown


def test_a_short_reason_is_whole_and_a_long_one_ends_at_a_word():
    assert clipped("Waiting for the next scheduling round.") == "Waiting for the next scheduling round."
    assert clipped("aaaa bbbb cccc", limit=9) == '<span title="aaaa bbbb cccc">aaaa bbbb\u2026</span>'
    assert clipped("aaaa bbbb, cccc", limit=11) == '<span title="aaaa bbbb, cccc">aaaa bbbb\u2026</span>'
    assert clipped("x" * 12, limit=5) == f'<span title="{"x" * 12}">xxxxx\u2026</span>'
    escaped = '<span title="a &lt;b&gt; &amp; &quot;c&quot; d">a &lt;b&gt; &amp;\u2026</span>'
    assert clipped('a <b> & "c" d', limit=8) == escaped


@pytest.mark.django_db
def test_the_catalog_and_telemetry_lists_show_three_figures(client, django_user_model, v100, resnet50):
    from catalog.models import Measurement, PredictorVersion
    from telemetry.models import Gpu, GpuSample, GpuSampleMinute, Node

    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root"))
    long = 4.307990192432654
    Measurement.objects.create(workload=resnet50, gpu_type=v100, throughput=long, power_w=212.71828,
                               source="profiling", observed_at=datetime(2026, 12, 2, 2, 17, 57, tzinfo=UTC))
    PredictorVersion.objects.create(name="p1", architecture="mlp", metrics={"val_mae": 0.0123456})
    gpu = Gpu.objects.create(node=Node.objects.create(hostname="n"), index=0, uuid="GPU-0", gpu_type=v100)
    GpuSample.objects.create(gpu=gpu, ts=datetime(2026, 12, 2, tzinfo=UTC), power_w=long)
    GpuSampleMinute.objects.create(gpu=gpu, minute=datetime(2026, 12, 2, tzinfo=UTC), samples=3, power_w_mean=long)
    shown = {
        "/admin/catalog/measurement/": ['field-throughput">4.31<', 'field-power_w">213<', "2026-12-02 02:17:57 UTC"],
        "/admin/catalog/predictorversion/": ['field-validation_mae">0.0123<'],
        "/admin/telemetry/gpusample/": ['field-power_w">4.31<'],
        "/admin/telemetry/gpusampleminute/": ['field-power_w_mean">4.31<'],
    }
    for url, cells in shown.items():
        page = client.get(url).content.decode()
        assert all(cell in page for cell in cells) and str(long) not in page, url
