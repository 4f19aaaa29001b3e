"""Convergence under faults: the Balancer controller (a subprocess, as users run it)
against an API server that drops watches, compacts its history (410 relists), answers
500/503 and 429 bursts and restarts on the same port, while hundreds of random
mutations land. Afterwards the state must be exactly what the pure functions say.

``CHAOS_SEEDS`` (default ``1,2``) picks the seeds; ``CHAOS_MUTATIONS``,
``CHAOS_BALANCERS`` make a longer soak (``make chaos SEED=7 MUTATIONS=3000``);
the JSON report goes to ``$CHAOS_REPORT_DIR`` (default: the test's tmp dir).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from chaos.harness import (
    FAULT_429,
    FAULT_500,
    FAULT_503,
    FAULT_COMPACTION,
    FAULT_RESTART,
    FAULT_WATCH_DROP,
    OP_CREATE,
    OP_DELETE,
    OP_RECREATE,
    ChaosConfig,
    ControllerProcess,
    env_seeds,
    run_convergence,
)


@pytest.mark.parametrize("seed", env_seeds())
def test_converges_exactly_under_faults(
    seed: int,
    tmp_path: Path,
    report_dir: Path,
    controllers: Callable[..., ControllerProcess],
    chaos_summary: Callable[[str], None],
) -> None:
    config = ChaosConfig.from_env(seed)
    register = controllers.register  # type: ignore[attr-defined]
    report = run_convergence(config, tmp_path / f"seed{seed}", on_controller=register)

    path = report_dir / f"chaos-report-seed{seed}.json"
    path.write_text(report.to_json())
    chaos_summary(f"{report.summary()}\n  report: {path}")

    # The run did what the issue asks for (else a green result proves nothing).
    faults = report.faults_by_kind
    assert report.mutations >= 300 and report.balancers >= 50
    assert faults.get(FAULT_WATCH_DROP, 0) >= 10
    assert faults.get(FAULT_COMPACTION, 0) >= 3
    assert faults.get(FAULT_RESTART, 0) >= 2
    assert faults.get(FAULT_500, 0) >= 1 and faults.get(FAULT_503, 0) >= 1
    assert faults.get(FAULT_429, 0) >= 1
    for op in (OP_CREATE, OP_DELETE, OP_RECREATE):
        assert report.mutations_by_kind.get(op, 0) > 0, op
    assert report.relists >= faults[FAULT_COMPACTION], "compactions forced no relist"

    assert report.converged, (
        f"seed {seed}: not converged {report.converge_after_faults_stopped_s:.0f}s after the "
        f"faults stopped:\n{report.diff_text}"
    )
    assert report.diff == {"missing": 0, "extra": 0, "stale": 0, "wrong_status": 0}
    assert report.controller_exit_code == 0, "the controller did not exit cleanly on SIGTERM"
