"""The corpus engine's layout is libparley's (corpus/engine_layout.h): a batch made through the C
API and ``parley diarize --print-layout`` lay out the same engines for the same settings."""
import json
import os
import subprocess

import pytest

import parley

MODELS = os.environ.get("PARLEY_TEST_MODELS", "")
CLI = os.environ.get("PARLEY_TEST_CLI", "")


def batch_layout(settings):
    """The layout a batch made from ``settings`` (parley._settings) lays out, through the C API
    (parley_batch_layout)."""
    batch = parley._parley.Batch(settings)
    try:
        return json.loads(batch.layout())
    finally:
        batch.finish()


def print_layout(*flags):
    """``parley diarize --print-layout --models MODELS FLAGS``, run to its end."""
    return subprocess.run([CLI, "diarize", "--print-layout", "--models", MODELS, *flags],
                          capture_output=True, text=True)


def printed_layout(*flags):
    """The layout ``parley diarize --print-layout`` prints for ``flags`` (it must succeed)."""
    printed = print_layout(*flags)
    assert printed.returncode == 0, printed.stderr
    return json.loads(printed.stdout)


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
@pytest.mark.parametrize("threads, step", [(2, 1.0), (1, 2.0)])
def test_batch_and_command_line_lay_out_the_same_engines(threads, step):
    from_c = batch_layout(parley._settings(models_dir=MODELS, threads=threads, step=step))
    from_cli = printed_layout("--threads", str(threads), "--step", str(step))
    assert from_cli == from_c
    assert from_c["engines"] == 1 and from_c["engine"]["threads"] == threads


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="several engines on the CPU need 2 cores")
def test_batch_and_command_line_lay_out_several_engines_alike():
    """Several engines sharing the CPU, through the C API's named options and the CLI's flags:
    one layout (engines, their threads, the decoding and clustering threads)."""
    from_c = batch_layout(parley._settings(models_dir=MODELS, threads=2, engines=2, jobs=3))
    assert printed_layout("--threads", "2", "--engines", "2", "--jobs", "3") == from_c
    assert from_c["engines"] == 2 and from_c["engine"]["threads"] == 1
    assert from_c["decode_threads"] == 3 and from_c["engines_per_device_automatic"] is False


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
def test_print_layout_follows_the_engines_flag():
    printed = print_layout("--threads", "2", "--engines", "2")
    if (os.cpu_count() or 1) < 2:
        assert printed.returncode != 0 and "--engines" in printed.stderr
        return
    assert printed.returncode == 0, printed.stderr
    layout = json.loads(printed.stdout)
    assert layout["engines"] == 2 and layout["engines_per_device_automatic"] is False
    assert layout["engine"]["threads"] == 1  # engines on the CPU share its threads


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
def test_map_lays_out_jobs_and_engines_as_the_command_line():
    """Pipeline(jobs=, engines=) is the batch map() runs on: the layout of `parley diarize
    --print-layout --jobs 3 --engines 1` for the same settings."""
    pipeline = parley.Pipeline(models_dir=MODELS, threads=2, jobs=3, engines=1)
    from_python = batch_layout(pipeline._settings)
    assert printed_layout("--threads", "2", "--jobs", "3", "--engines", "1") == from_python
    assert from_python["decode_threads"] == 3 and from_python["engines"] == 1


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
def test_flags_registered_from_the_table_reach_the_engine():
    """--no-streaming has no field of its own in the CLI (the table's loop registers it): it
    reaches the engine's settings as every option does."""
    assert printed_layout("--no-streaming")["engine"]["streaming"] is False
    assert printed_layout()["engine"]["streaming"] is True
