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
