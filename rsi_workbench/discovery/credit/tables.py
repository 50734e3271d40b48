"""Credit tables: a :class:`CreditResult` as pandas tables (hypotheses, edges, trajectories)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rsi_workbench.discovery.credit.pipeline import CreditResult

if TYPE_CHECKING:
    import pandas as pd


def credit_tables(result: CreditResult) -> dict[str, pd.DataFrame]:
    """Pandas tables of a :class:`CreditResult`: hypotheses (eq. 2-5, 7 caps), edges, trajectories (w, omega)."""
    import pandas as pd

    hyp = pd.DataFrame(
        [
            {
                **{
                    k: getattr(hw, k)
                    for k in ("hypothesis", "stratum", "mu", "sigma", "n_effective", "s", "rank")
                },
                **{k: getattr(hw, k) for k in ("rho_cov", "rho_unc", "valid", "progress", "q", "status")},
                "q_tilde": result.capped[h].q_tilde if h in result.capped else None,
                "duplicate_of": result.capped[h].suppressed_duplicate_of if h in result.capped else None,
            }
            for h, hw in result.weights.items()
        ]
    )
    edges = pd.DataFrame(
        [
            {
                "trajectory": d.claim.trajectory,
                "hypothesis": d.claim.hypothesis,
                "basis": d.claim.basis,
                "admitted": d.admitted,
                "kind": d.kind,
                "alpha": result.alpha.get(d.claim.hypothesis, {}).get(d.claim.trajectory)
                if d.admitted
                else None,
                "reason": d.reason,
            }
            for d in result.edges
        ]
    )
    traj = pd.DataFrame(
        [{"trajectory": i, "w": v, "omega": result.release.omega.get(i, 0.0)} for i, v in result.w.items()]
    )
    return {"hypotheses": hyp, "edges": edges, "trajectories": traj}
