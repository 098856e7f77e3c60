"""The header of a leaderboard page: the lines under its claims that say how the values and
the page were made, which cells and seeds they hold, the claims' digest and registration,
the code and plugins that ran them, how to read a value, and where every value lies."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from geobench.claims.registration import claims_digest
from geobench.claims.values import StoredValues
from geobench.records import DEFAULT_THREADS, Cell, plugins_text
from geobench.report.page_record import provenance
from geobench.report.paths import shown_path
from geobench.report.tables import FAILED_MARK, MISSING
from geobench.study import Study
from geobench.suite import LoadedSuite
from geobench.suite.seeds import SeedSet, seed_cells, seed_plan


def named_registration(study: Study, out: Path, which: SeedSet = "confirm"
                       ) -> dict[str, str] | None:
    """The profile's registration of its ``which`` seeds (confirmation or replication) as
    the page names it: its path from the page's folder, when it was made and its sha256;
    None when the profile has none (or no such seeds for it to register)."""
    declared = study.has_confirmation if which == "confirm" else study.has_replication
    found = study.registered(which) if declared else None
    if found is None:
        return None
    return {"file": Path(os.path.relpath(found.path, out.parent)).as_posix(),
            "registered": found.record["registered"], "sha256": found.sha256}


def header(loaded: LoadedSuite, cells: list[Cell], values: StoredValues, out: Path,
           stored: str, ran_under: str, registration: dict[str, str] | None,
           replication: dict[str, str] | None = None) -> str:
    """The lines under the page's claims: the suite's description, how the values and the
    page were made, the cells, the claims' digest, seeds and registrations
    (``named_registration``), the code and plugins, how to read a value, and the CSVs."""
    suite = loaded.suite
    prov = provenance(cells, values)
    threads = prov["threads"]  # 0: unknown
    counts = ", ".join(f"{n} {s}" for s, n in prov["statuses"].items())
    if prov["arms_diverged"]:
        counts += "; arm diverged in a complete cell: " + ", ".join(
            f"{arm} in {n}" for arm, n in prov["arms_diverged"].items())
    seeds = prov["trial_seeds"]
    profile = "".join(sorted({f" --profile {c.profile}" for c in cells if c.profile != "smoke"}))
    flag = f" --threads {threads[0]}" if threads not in ([], [str(DEFAULT_THREADS)]) \
        and len(threads) == 1 else ""
    csv_name = out.with_suffix(".csv").name
    suite_file = shown_path(loaded.path)
    core = f" (geobench {', '.join(prov['geobench'])})" if prov["geobench"] else ""
    lines = [
        suite.description.strip(),
        "",
        f"- generated: {dt.date.today().isoformat()}; the values by "
        f"`geobench run {suite_file}{profile}{flag}`, this page by "
        f"`geobench leaderboard {suite_file}{profile} --out {shown_path(out)}`",
        f"- cells: {len(cells)} ({counts}); trial seeds: {', '.join(map(str, seeds))}",
        *_claims_line(loaded, cells, values, registration, replication),
        f"- code: {', '.join(prov['code']) or 'n/a'}{core}; plugins: "
        f"{plugins_text(prov['plugins']) or 'not recorded'}; torch "
        f"{', '.join(prov['torch']) or 'n/a'}; devices "
        f"{', '.join(prov['devices']) or 'n/a'}; CPU {'; '.join(prov['cpus']) or 'not recorded'}"
        f"; torch threads per cell {', '.join(threads) or 'not recorded'}",
        "- values: mean ± half-width of the 95% Student-t interval over trial seeds "
        f"(n=k/N: k of N seeds have a value); †k: k seeds diverged; {MISSING}: no result; "
        + (f"{FAILED_MARK}k: the metric failed on the arm in k seeds; "
           if values.failures(cells) else "") +
        "**bold**: best in a column whose metric has a direction",
        f"- every value as CSV: [{csv_name}]({csv_name}); every stored value of every cell: "
        f"[{stored}]({stored}) (`geobench results {suite_file}{profile} --csv --series`); "
        f"what each cell ran under (times, code, plugins, registration, claim digests): "
        f"[{ran_under}]({ran_under})",
        "",
    ]
    return "\n".join(lines) + "\n"


def _claims_line(loaded: LoadedSuite, cells: list[Cell], values: StoredValues,
                 registration: dict[str, str] | None,
                 replication: dict[str, str] | None) -> list[str]:
    """The claims' digest, which trial seeds decide them and when those cells ran, the
    registration they were decided under, and the replication seeds with theirs."""
    if not loaded.suite.claims:
        return []
    profile = cells[0].profile if cells else "smoke"
    plan = seed_plan(loaded, profile)
    line = (f"- claims: {len(loaded.suite.claims)}, definitions digest "
            f"`{claims_digest(loaded.suite)}`; ")
    if plan.confirm is None:
        return [line + "no confirmation seeds: the verdicts read the exploration seeds "
                       f"{_seed_text(plan.seeds('explore'))}"]
    replicated = "" if plan.replicate is None else (
        f"; replication seeds {_seed_text(plan.seeds('replicate'))} "
        f"({_ran(loaded, profile, cells, values, 'replicate')}) decide each verdict again, "
        f"{_registered(replication)}")
    return [line + f"confirmation seeds {_seed_text(plan.seeds('confirm'))} "
                   f"({_ran(loaded, profile, cells, values, 'confirm')}) decide the verdicts; "
                   f"{_registered(registration)}{replicated}; exploration seeds "
                   f"{_seed_text(plan.seeds('explore'))}"]


def _ran(loaded: LoadedSuite, profile: str, cells: list[Cell], values: StoredValues,
         which: SeedSet) -> str:
    """When the cells of ``which`` seeds ran: ``ran <day> to <day>`` or ``not run yet``."""
    ran = sorted(t for c in seed_cells(loaded, profile, cells, which)
                 if (t := values.finished(c)) is not None)
    return f"ran {_day(ran[0])} to {_day(ran[-1])}" if ran else "not run yet"


def _registered(registration: dict[str, str] | None) -> str:
    return "no registration" if registration is None else (
        f"registered in `{registration['file']}` on {registration['registered']} "
        f"(sha256 `{registration['sha256'][:12]}`)")


def _seed_text(seeds: list[int]) -> str:
    """Consecutive seeds as ``a–b``, others listed."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _day(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
