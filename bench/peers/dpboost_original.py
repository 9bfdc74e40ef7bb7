"""The DPBoost authors' own code as a peer column: run it on dpexp's folds, cache its cells.

The original (QinbinLi/DPBoost, a LightGBM 2.2.4-dev fork) is *not* part of dpexp and is
never vendored: ``--build REPO`` builds it beside the project, from a clone, a bare mirror
or the official URL (https://github.com/QinbinLi/DPBoost; needs cmake, g++ and git), into
a folder holding the two branches' builds and a side virtualenv (the fork needs numpy < 2)::

    ROOT/bin/python-package   branch binary-classification (objective=binary)
    ROOT/reg/python-package   branch master (square loss: regression, and classification
                              as regression on labels -1/+1, as the paper's text says)
    ROOT/venv/bin/python      numpy<2, scipy<1.14, scikit-learn<1.6

The build is idempotent (built branches and a working venv are kept). Then, from this
project's environment::

    python bench/peers/dpboost_original.py --original ROOT fig2 --scale paper \
        --dataset adult --dataset cod-rna --dataset abalone --setting paper --setting authors \
        [--build https://github.com/QinbinLi/DPBoost]

For each (dataset, setting, epsilon, fold) of the spec's grid it takes *exactly* the rows
and folds dpexp's cells use (same loader, same ``split_indices``, same run seed), trains
the original in the side venv (``dpboost_original_driver.py``), scores the test fold with
dpexp's metric definitions and writes a cell in dpexp's results schema: algorithm
``dpboost_original``, label ``DPBoost (original, <setting>)``, the fork's settings in
``params``. ``dpexp results/render/report`` then show it beside dpexp's own columns.

Settings (``--setting``):

* ``paper`` -- the paper's text: square loss (branch master) with h = 1, learning rate
  0.01, initial score 0, depth 6, 50 trees in one ensemble, lambda 0.1.
* ``authors`` -- the authors' scripts (``experiments.py`` / ``run_exp.py``): classification
  with the binary (logistic) objective and its real hessians, lr 0.1, num_leaves 31;
  regression with square loss and LightGBM's initial score = the label mean.

Both pass the scripts' ``bagging_freq=1, bagging_fraction=0.5``: in the fork that is not
bagging but the switch that turns on DPBoost's disjoint subsets and gradient filtering
(``src/boosting/gbdt.cpp``: ``Bagging()`` runs only when ``bagging_freq > 0`` and is set
up only when ``bagging_fraction < 1``; the ``DPBoost_2level`` subset sizes are Algorithm
2's shares). Without it every tree sees every row while its leaf noise assumes disjoint
subsets, i.e. the run is not DPBoost and spends T times its stated budget.

Privacy: the original's accounting is its own. Its rows carry ``private = false`` with
the reason, never an ``epsilon_spent`` as if dpexp had checked it: the fork's noise seed
is fixed (42), its quantile bins and leaf-wise growth read the data without budget, and
the logistic hessians break the sensitivities it assumes (``../shared`` notes, verified in
the DPBoost fidelity work).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

DRIVER = Path(__file__).with_name("dpboost_original_driver.py")
ALGORITHM = "dpboost_original"
NOT_DP = ("the authors' code, with its own accounting: fixed noise seed 42 (the same noise "
          "in every fold), data-quantile bins and exact leaf-wise growth without budget")


#: The fork's two branches and the folder of ROOT each is built into.
BRANCHES = {"bin": "binary-classification", "reg": "master"}
OFFICIAL_URL = "https://github.com/QinbinLi/DPBoost"
#: The side venv's pins: the fork's python package predates numpy 2 and scikit-learn 1.6.
VENV_REQUIREMENTS = ("numpy<2", "scipy<1.14", "scikit-learn<1.6")


def _git(repo: Path) -> list[str]:
    """``git`` pointed at a work tree or at a bare repository (a mirror)."""
    return ["git", "-C", str(repo)] if (repo / ".git").exists() else ["git", f"--git-dir={repo}"]


def _branch_ref(git: list[str], branch: str) -> str:
    """The branch itself (a mirror), else its remote-tracking ref (an ordinary clone)."""
    for ref in (branch, f"origin/{branch}"):
        if subprocess.run([*git, "rev-parse", "-q", "--verify", ref], capture_output=True).returncode == 0:
            return ref
    raise SystemExit(f"branch {branch} not found in the repository")


def build_original(source: str, root: Path, jobs: int = 2, log=print) -> None:
    """Build both branches of the fork under ``root`` and its side venv (idempotent: a
    branch whose ``lib_lightgbm.so`` exists and a venv that imports are kept).

    ``source``: a clone or a bare mirror of QinbinLi/DPBoost, or a URL to clone it from
    (``OFFICIAL_URL`` for users with network). Each branch is exported with ``git archive``
    (no work tree is touched) and built with CMake, CPU only, target ``_lightgbm``; the
    GPU submodule is not needed. Nothing of the fork enters this repository.
    """
    root.mkdir(parents=True, exist_ok=True)
    repo = Path(source)
    if not repo.exists():
        repo = root / "src.git"
        if not repo.exists():
            log(f"cloning {source} into {repo}")
            subprocess.run(["git", "clone", "-q", "--mirror", source, str(repo)], check=True)
    git = _git(repo)
    for folder, branch in BRANCHES.items():
        target = root / folder
        if (target / "lib_lightgbm.so").exists():
            log(f"{target}: already built ({branch})")
            continue
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen([*git, "archive", _branch_ref(git, branch)], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(target)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise SystemExit(f"git archive of {branch} failed")
        build = target / "build"
        build.mkdir(exist_ok=True)
        log(f"building {branch} in {build} (cmake, make -j{jobs} _lightgbm; a few minutes)")
        with open(build / "build.log", "w") as out:
            for cmd in (["cmake", "-DUSE_GPU=OFF", ".."], ["make", f"-j{jobs}", "_lightgbm"]):
                if subprocess.run(cmd, cwd=build, stdout=out, stderr=subprocess.STDOUT).returncode:
                    raise SystemExit(f"{' '.join(cmd)} failed for {branch}: see {build / 'build.log'}")
        if not (target / "lib_lightgbm.so").exists():
            raise SystemExit(f"{branch} built no lib_lightgbm.so: see {build / 'build.log'}")
    python = root / "venv" / "bin" / "python"
    if not python.exists():
        log(f"creating the side venv {root / 'venv'} ({', '.join(VENV_REQUIREMENTS)})")
        subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *VENV_REQUIREMENTS], check=True)
    for folder in BRANCHES:
        env = {"PYTHONPATH": str(root / folder / "python-package"), "PATH": "/usr/bin:/bin"}
        subprocess.run([str(python), "-c", "import lightgbm"], env=env, check=True)
    log(f"the original is built under {root}")


def not_dp_reason(setting: str, task: str) -> str:
    """Why a cell of the original is not DP: what every setting does, plus what the
    authors' scripts add (logistic hessians; regression's exact label-mean start)."""
    if setting == "authors" and task == "classification":
        return NOT_DP + ", logistic hessians p(1-p) outside its h = 1 sensitivity bounds"
    if setting == "authors":
        return NOT_DP + ", initial score = the exact label mean (boost_from_average)"
    return NOT_DP


def fork_params(setting: str, task: str, epsilon: float, n_trees: int,
                per_ensemble: int | None = None) -> dict:
    """The fork's parameters for one setting (names as in the authors' scripts).

    ``per_ensemble`` trees per ensemble (default and at most: one ensemble of ``n_trees``):
    the fork's DPBoost_2level splits ``total_budget`` evenly over the ensembles (its
    GBDT::TrainOneIter), as Algorithm 2 does (Figs. 3, 7, 8: 5,000 trees in ensembles of
    50 with epsilon 5 each).
    """
    per = min(int(per_ensemble or n_trees), n_trees)  # as dpexp's DPBoost: at most one ensemble
    common = {
        "boosting_type": "gbdt", "max_depth": 6, "lambda_l2": 0.1, "max_bin": 255,
        "num_iterations": n_trees, "my_n_trees": n_trees, "total_budget": float(epsilon),
        "boost_method": "DPBoost_2level", "high_level_boost_round": -(-n_trees // per),
        "inner_boost_round": per, "balance_partition": 0, "geo_clip": 1, "verbose": -1,
        "num_threads": 1,
        # The fork's switch for DPBoost's data partition and gradient filtering, in both
        # settings: its GBDT::TrainOneIter calls Bagging() only when bagging_freq > 0, and
        # ResetBaggingConfig sets bagging up only when bagging_fraction < 1; with
        # DPBoost_2level the subset sizes are then Algorithm 2's shares, not the fraction.
        # Without the switch every tree trains on every row while its leaves still get the
        # noise of parallel composition (epsilon/2 per tree): T times the stated budget.
        "bagging_freq": 1, "bagging_fraction": 0.5,
    }
    if setting == "paper":
        return {**common, "objective": "regression", "learning_rate": 0.01, "num_leaves": 64,
                "boost_from_average": False}
    if setting == "authors":
        objective = "binary" if task == "classification" else "regression"
        extra = {"boost_from_average": False} if task == "classification" else {}
        return {**common, "objective": objective, "learning_rate": 0.1, "num_leaves": 31,
                **extra}
    raise ValueError(f"unknown setting {setting!r}: use 'paper' or 'authors'")


#: Fork parameters left out of a cell's ``params``: the budget is the cell's own ``epsilon``
#: (one series spans every epsilon), the others do not change what is trained.
_UNRECORDED = ("total_budget", "num_threads", "verbose")


def recorded_settings(setting: str, task: str, n_trees: int, per_ensemble: int | None = None) -> dict:
    """The fork's settings as they stand in a cell's ``params`` (``fork``): everything
    :func:`fork_params` passes but the budget (the cell's epsilon) and run-only knobs."""
    params = fork_params(setting, task, 1.0, n_trees, per_ensemble)
    return {k: v for k, v in params.items() if k not in _UNRECORDED}


def branch_for(setting: str, task: str) -> str:
    """``bin`` (binary-classification branch) only for the authors' logistic objective."""
    return "bin" if setting == "authors" and task == "classification" else "reg"


def fork_targets(ds, y: np.ndarray) -> np.ndarray:
    """Labels as the original sees them: classes -> -1/+1; regression scaled to [-1, 1]."""
    if ds.task == "classification":
        return np.where(y == ds.classes[-1], 1.0, -1.0)
    lo, hi = ds.label_domain
    return 2.0 * (np.asarray(y, float) - lo) / (hi - lo) - 1.0


def _save_fold(path: Path, X_tr, y_tr, X_te) -> None:
    arrays: dict[str, np.ndarray] = {"y_train": y_tr}
    for name, X in (("X_train", X_tr), ("X_test", X_te)):
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            arrays |= {f"{name}_data": X.data, f"{name}_indices": X.indices,
                       f"{name}_indptr": X.indptr, f"{name}_shape": np.array(X.shape)}
        else:
            arrays[name] = np.asarray(X, dtype=np.float64)
    np.savez(path, **arrays)


def train_original(root: Path, python: Path, branch: str, params: dict, X_tr, y_tr, X_te,
                   steps: list[int] | None = None):
    """Raw test scores, training seconds and the raw scores after each of ``steps`` trees
    (``(len(steps), n_test)``) from one side-venv run of the original."""
    with tempfile.TemporaryDirectory() as tmp:
        fold, cfg, out = Path(tmp, "in.npz"), Path(tmp, "in.json"), Path(tmp, "out.npz")
        _save_fold(fold, X_tr, y_tr, X_te)
        cfg.write_text(json.dumps({"params": params, "staged_steps": list(steps or [])}))
        env = {"PYTHONPATH": str(root / branch / "python-package"), "OMP_NUM_THREADS": "1",
               "PATH": "/usr/bin:/bin"}
        done = subprocess.run([str(python), str(DRIVER), str(fold), str(cfg), str(out)],
                              env=env, capture_output=True, text=True)
        if done.returncode < 0:  # e.g. SIGKILL from the kernel's out-of-memory killer
            raise RuntimeError(f"the original ({branch}) was killed by signal "
                               f"{-done.returncode} (out of memory?); its cell is not written")
        if done.returncode != 0:
            raise RuntimeError(f"the original failed ({branch}):\n{done.stderr[-2000:]}")
        res = np.load(out)
        return res["raw_score"], float(res["fit_seconds"]), res["staged_raw"]


def metric_values(ds, spec, raw: np.ndarray, y_te: np.ndarray, setting: str) -> dict[str, float]:
    """dpexp's metric definitions on the original's predictions (the spec's metrics)."""
    wanted = spec.metrics_for(ds.task)
    return {k: v for k, v in all_metrics(ds, raw, y_te).items() if k in wanted}


def all_metrics(ds, raw: np.ndarray, y_te: np.ndarray) -> dict[str, float]:
    """Every metric the peer computes from the original's raw test scores."""
    if ds.task == "classification":
        # binary objective: raw is the log-odds; square loss: the score on -1/+1. Both > 0.
        pred = np.where(raw > 0, ds.classes[-1], ds.classes[0])
        acc = float(np.mean(pred == y_te))
        out = {"accuracy": acc, "error": 1.0 - acc}
    else:
        lo, hi = ds.label_domain
        pred = (raw + 1.0) / 2.0 * (hi - lo) + lo
        out = {"rmse": float(np.sqrt(np.mean((pred - y_te) ** 2))),
               "mae": float(np.mean(np.abs(pred - y_te)))}
    return out


def staged_metric(spec, task: str) -> str | None:
    """The spec's curve metric for ``task`` (``staged_error`` / ``staged_rmse``), if any."""
    return next((m for m in spec.metrics_for(task) if m.startswith("staged_")), None)


def staged_steps(n_trees: int) -> list[int]:
    """The tree counts a curve is scored at: dpexp's own (:func:`dpexp.experiments.metrics.
    staged_error`): 1, every ``n_trees // 100`` trees, and the last."""
    every = max(1, n_trees // 100)
    return sorted(set(range(every, n_trees + 1, every)) | {1, n_trees})


def staged_values(ds, spec, staged: np.ndarray, steps: list[int], y_te: np.ndarray) -> list[tuple]:
    """``(metric, step, value)`` of the curve metric, dpexp's definition on the original's
    raw scores after each step (same mapping as :func:`metric_values`)."""
    metric = staged_metric(spec, ds.task)
    if metric is None:
        return []
    final = metric.removeprefix("staged_")
    return [(metric, float(step), all_metrics(ds, raw, y_te)[final])
            for step, raw in zip(steps, staged, strict=True)]


def peer_cells(spec, scale: str, datasets: list[str] | None, settings: list[str],
               epsilons: list[float] | None, seed: int):
    """The peer's cells: the spec's grid (at ``scale``) with the original as algorithm."""
    from dpexp.datasets.registry import get_dataset_info
    from dpexp.experiments.cells import Cell, dataset_version

    refs = [d for d in spec.datasets if not datasets or d.name in datasets or d.key in datasets]
    dpb = next(a for a in spec.algorithms if a.name == "dpboost")
    n_trees = int(dpb.params.get("n_trees", 50))
    per_ensemble = int(dpb.params.get("trees_per_ensemble", n_trees))
    n_folds = spec.cv.folds if spec.cv.scheme == "kfold" else 1
    for ref in refs:
        task = get_dataset_info(ref.name).task
        for setting in settings:
            # The rows' params are the cell's (its key is rebuilt from them in the
            # committed table), so the fork's settings live in the cell itself.
            params = {"setting": setting, "n_trees": n_trees,
                      "fork": recorded_settings(setting, task, n_trees, per_ensemble)}
            for eps in epsilons or spec.epsilons:
                for rep in range(spec.cv.repeats):
                    for fold in range(n_folds):
                        yield Cell(
                            experiment=spec.id, scale=scale, dataset=ref,
                            label=f"DPBoost (original, {setting})", algorithm=ALGORITHM,
                            procedure=None, params=params, epsilon=float(eps), fold=fold,
                            repeat=rep, n_folds=n_folds, seed=seed,
                            data_version=dataset_version(ref.name), cv=spec.cv,
                            max_rows=spec.max_rows(scale),
                            metrics=tuple(sorted(spec.metrics_for(task))),
                        )


def run_cell(cell, spec, root: Path, python: Path, results_dir: Path, mirror: str | None):
    """Train the authors' build on the cell's fold and cache its rows through dpexp's
    results layer (the runner's schema, ``wall_seconds`` included)."""
    from dpexp.experiments.environment import git_revision
    from dpexp.experiments.execute import load_for_cell, split_indices
    from dpexp.experiments.noise import PEER_NOISE
    from dpexp.experiments.rows import CellOutcome, result_rows, write_cell_rows

    started = time.perf_counter()
    ds = load_for_cell(cell.dataset, spec.max_rows(cell.scale), cell.seed, mirror)
    tr, te = split_indices(ds, spec.cv, cell.fold, cell.repeat, cell.seed)
    setting = cell.params["setting"]
    n_trees = cell.params["n_trees"]
    params = fork_params(setting, ds.task, cell.epsilon, n_trees, cell.params["fork"]["inner_boost_round"])
    steps = staged_steps(n_trees) if staged_metric(spec, ds.task) else []
    raw, seconds, staged = train_original(root, python, branch_for(setting, ds.task), params,
                                          ds.X[tr], fork_targets(ds, ds.y[tr]), ds.X[te], steps)
    values = metric_values(ds, spec, raw, ds.y[te], setting)
    curve: dict[str, dict[int, float]] = {}
    for metric, step, value in staged_values(ds, spec, staged, steps, ds.y[te]):
        curve.setdefault(metric, {})[step] = value
    # the fork neither spends through an accountant nor reports its spend: NaN, not private
    out = CellOutcome(values={**values, **curve}, fit_seconds=seconds,
                      not_dp_reason=not_dp_reason(setting, ds.task), noise=PEER_NOISE)
    wall = time.perf_counter() - started
    rows = result_rows(cell, out, n_train=int(len(tr)), n_test=int(len(te)),
                       domain_source=str(getattr(ds, "domain_source", "")),
                       provenance={"dpexp_version": "peer:QinbinLi/DPBoost",
                                   "git_revision": git_revision()},
                       wall_seconds=wall)
    write_cell_rows(results_dir, cell, rows, ledger=None, wall_seconds=wall)
    return values


def _shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``1 <= K <= N``, 1-based as ``dpexp run --shard``
    (argparse type of ``--shard``)."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected K/N, e.g. 1/2, got {text!r}") from None
    if n < 1 or not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"need 1 <= K <= N, got {text!r}")
    return k, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment", help="a DPBoost spec with a dpboost column, e.g. fig2")
    ap.add_argument("--original", type=Path, required=True, help="ROOT of the builds (see above)")
    ap.add_argument("--python", type=Path, help="side venv python (default ROOT/venv/bin/python)")
    ap.add_argument("--scale", default="smoke", choices=("smoke", "paper"))
    ap.add_argument("--dataset", action="append", help="restrict to datasets (repeatable)")
    ap.add_argument("--setting", action="append", choices=("paper", "authors"))
    ap.add_argument("--epsilons", help="comma-separated, default: the spec's")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--results-dir", type=Path, default=Path("results"))
    ap.add_argument("--mirror", default=None, help="dataset mirror (else DPEXP_DATA_MIRROR)")
    ap.add_argument("--force", action="store_true", help="recompute cached cells")
    ap.add_argument("--shard", type=_shard, default=(1, 1), metavar="K/N",
                    help="run only the K-th of every N cells of the list, so N processes "
                         "(K = 1 .. N, as dpexp run --shard) share one grid without computing "
                         "a cell twice (default 1/1: every cell)")
    ap.add_argument("--build", metavar="REPO", help="first build the original into --original "
                    f"from REPO: a clone, a bare mirror or a URL (e.g. {OFFICIAL_URL})")
    ap.add_argument("--build-jobs", type=int, default=2, help="make -j for --build")
    args = ap.parse_args(argv)
    if args.build:
        build_original(args.build, args.original, args.build_jobs)

    from dpexp.experiments import cache
    from dpexp.experiments.catalog import resolve

    python = args.python or args.original / "venv" / "bin" / "python"
    for need in (python, DRIVER, *(args.original / b / "python-package" for b in ("bin", "reg"))):
        if not Path(need).exists():
            ap.error(f"{need} not found: build the original first (see this script's docstring)")
    spec = resolve(args.experiment).at_scale(args.scale)
    if not any(a.name == "dpboost" for a in spec.algorithms):
        ap.error(f"{spec.id} has no dpboost column to stand beside")
    known = {name for d in spec.datasets for name in (d.name, d.key)}
    unknown = sorted(set(args.dataset or ()) - known)
    if unknown:
        ap.error(f"{spec.id} has no dataset {', '.join(unknown)} (it has {', '.join(sorted(known))})")
    epsilons = [float(e) for e in args.epsilons.split(",")] if args.epsilons else None
    cells = list(peer_cells(spec, args.scale, args.dataset, args.setting or ["paper"],
                            epsilons, args.seed))
    k, n = args.shard
    for i, cell in enumerate(cells, 1):
        if (i - 1) % n != k - 1 or (not args.force and cache.has_cell(args.results_dir, cell)):
            continue
        values = run_cell(cell, spec, args.original, python, args.results_dir, args.mirror)
        print(f"[{i}/{len(cells)}] {cell.dataset.key} {cell.label} eps={cell.epsilon:g} "
              f"fold {cell.fold}: {values}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
