"""bench graphs: on a GPU it times replays (run by bench.gpu_check, and on the fake driver by
tests/bench/test_gpu_check_fake_driver.py); here, without one, it says so and measures nothing."""

from bench.__main__ import main


def test_without_a_gpu_it_reports_that_nothing_was_measured(capsys):
    assert main(["graphs", "--quick", "--no-torch"]) == 0
    out = capsys.readouterr().out
    assert "No GPU: nothing measured" in out

