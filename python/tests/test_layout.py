"""The corpus engine's layout is libparley's (corpus/engine_layout.h): a batch made through the C
API and ``parley diarize --print-layout`` lay out the same engines for the same settings."""
import json
import os
import subprocess

import pytest

import parley

MODELS = os.environ.get("PARLEY_TEST_MODELS", "")
CLI = os.environ.get("PARLEY_TEST_CLI", "")


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
@pytest.mark.parametrize("threads, step", [(2, 1.0), (1, 2.0)])
def test_batch_and_command_line_lay_out_the_same_engines(threads, step):
    batch = parley._parley.Batch(parley._settings(models_dir=MODELS, threads=threads, step=step))
    try:
        from_c = json.loads(batch.layout())
    finally:
        batch.finish()
    printed = subprocess.run([CLI, "diarize", "--print-layout", "--models", MODELS,
                              "--threads", str(threads), "--step", str(step)],
                             capture_output=True, text=True, check=True).stdout
    from_cli = json.loads(printed)
    assert from_cli == from_c
    assert from_c["engines"] == 1 and from_c["engine"]["threads"] == threads


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="several engines on the CPU need 2 cores")
def test_batch_and_command_line_lay_out_several_engines_alike():
    """Several engines sharing the CPU, through the C API's named options and the CLI's flags:
    one layout (engines, their threads, the decoding and clustering threads)."""
    batch = parley._parley.Batch(parley._settings(models_dir=MODELS, threads=2, engines=2,
                                                  jobs=3))
    try:
        from_c = json.loads(batch.layout())
    finally:
        batch.finish()
    printed = subprocess.run([CLI, "diarize", "--print-layout", "--models", MODELS,
                              "--threads", "2", "--engines", "2", "--jobs", "3"],
                             capture_output=True, text=True, check=True).stdout
    assert json.loads(printed) == from_c
    assert from_c["engines"] == 2 and from_c["engine"]["threads"] == 1
    assert from_c["decode_threads"] == 3 and from_c["engines_per_device_automatic"] is False


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
def test_print_layout_follows_the_engines_flag():
    printed = subprocess.run([CLI, "diarize", "--print-layout", "--models", MODELS,
                              "--threads", "2", "--engines", "2"],
                             capture_output=True, text=True)
    if (os.cpu_count() or 1) < 2:
        assert printed.returncode != 0 and "--engines" in printed.stderr
        return
    layout = json.loads(printed.stdout)
    assert layout["engines"] == 2 and layout["engines_per_device_automatic"] is False
    assert layout["engine"]["threads"] == 1  # engines on the CPU share its threads


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
def test_map_lays_out_jobs_and_engines_as_the_command_line():
    """Pipeline(jobs=, engines=) is the batch map() runs on: the layout of `parley diarize
    --print-layout --jobs 3 --engines 1` for the same settings."""
    pipeline = parley.Pipeline(models_dir=MODELS, threads=2, jobs=3, engines=1)
    batch = parley._parley.Batch(pipeline._settings)
    try:
        from_python = json.loads(batch.layout())
    finally:
        batch.finish()
    printed = subprocess.run([CLI, "diarize", "--print-layout", "--models", MODELS,
                              "--threads", "2", "--jobs", "3", "--engines", "1"],
                             capture_output=True, text=True, check=True).stdout
    assert json.loads(printed) == from_python
    assert from_python["decode_threads"] == 3 and from_python["engines"] == 1


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
def test_flags_registered_from_the_table_reach_the_engine():
    """--no-streaming has no field of its own in the CLI (the table's loop registers it): it
    reaches the engine's settings as every option does."""
    printed = subprocess.run([CLI, "diarize", "--print-layout", "--models", MODELS,
                              "--no-streaming"], capture_output=True, text=True, check=True).stdout
    assert json.loads(printed)["engine"]["streaming"] is False
    printed = subprocess.run([CLI, "diarize", "--print-layout", "--models", MODELS],
                             capture_output=True, text=True, check=True).stdout
    assert json.loads(printed)["engine"]["streaming"] is True
