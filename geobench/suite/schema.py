"""Pydantic models of a suite file: profiles, leaderboard, claims (docs/suites.md)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StrictInt, field_validator, model_validator

from geobench.contract.spec import ComponentSpec, Strict

NAME = re.compile(r"[A-Za-z0-9_.-]+")
MAX_NAME = 100
"""Longest suite, profile, arm, claim or metric id: names become parts of file names."""
MAX_SEED = 2**63 - 1
"""Largest trial seed: the store keeps seeds as SQLite's 64-bit integers."""


def _path_name(name: str) -> str:
    if len(name) > MAX_NAME:
        raise ValueError(f"{name[:20]!r}... has {len(name)} characters; names used in file "
                         f"paths have at most {MAX_NAME}")
    if not NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError(f"{name!r}: names used in file paths match {NAME.pattern} and are "
                         "not '.' or '..'")
    return name


Name = Annotated[str, AfterValidator(_path_name)]
"""A suite, profile or arm name: it becomes part of file names and result keys."""


def _trial_seeds(seeds: int | list[int]) -> int | list[int]:
    allowed = (f"a count N >= 1 (seeds 0..N-1) or a list of distinct integers in 0..{MAX_SEED}"
               " (2^63 - 1)")
    if isinstance(seeds, int) and not 1 <= seeds <= MAX_SEED:
        raise ValueError(f"{seeds} trial seeds: seeds is {allowed}")
    if isinstance(seeds, list):
        if not seeds or min(seeds) < 0 or max(seeds) > MAX_SEED:
            raise ValueError(f"seeds {seeds}: seeds is {allowed}")
        dup = next((s for s in seeds if seeds.count(s) > 1), None)
        if dup is not None:
            raise ValueError(f"trial seed {dup} appears twice; seeds is {allowed}")
    return seeds


Seeds = Annotated[StrictInt | list[StrictInt], AfterValidator(_trial_seeds)]
"""Trial seeds: a count N (seeds 0..N-1) or a list of distinct non-negative integers."""


class SeedRange(Strict):
    """``count`` consecutive trial seeds from ``first``."""

    first: int = Field(ge=0, le=MAX_SEED)
    count: int = Field(ge=1, le=MAX_SEED)

    @model_validator(mode="after")
    def _fits(self) -> SeedRange:
        if self.first + self.count - 1 > MAX_SEED:
            raise ValueError(f"seeds {self.first}..{self.first + self.count - 1} pass the "
                             f"largest trial seed {MAX_SEED} (2^63 - 1)")
        return self

    @property
    def seeds(self) -> list[int]:
        return list(range(self.first, self.first + self.count))


def _confirm_seeds(seeds: list[int] | SeedRange) -> list[int] | SeedRange:
    if isinstance(seeds, list):
        _trial_seeds(seeds)
    return seeds


ConfirmSeeds = Annotated[list[StrictInt] | SeedRange, AfterValidator(_confirm_seeds)]
"""Confirmation trial seeds: a list of distinct integers or ``{first, count}``; disjoint from
the exploration seeds of the same profile (docs/claims.md, "Confirmation seeds")."""




Stat = Literal["last", "first", "min", "max", "mean"]
"""Reductions of a run's series (``geobench.claims.values.series_stat``)."""



class Profile(Strict):
    base: dict[str, Any] = Field(default_factory=dict)
    arms: dict[str, dict[str, Any]] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    zip: list[dict[str, list[Any]]] | None = None
    exclude: list[dict[str, Any]] | None = None
    seeds: Seeds | None = None
    confirm: ConfirmSeeds | None = Field(
        None, description="confirmation trial seeds, disjoint from 'seeds' (the exploration "
        "seeds): the published verdicts read these")
    replicate: ConfirmSeeds | None = Field(
        None, description="replication trial seeds, disjoint from 'seeds' and 'confirm': "
        "each verdict is decided again on these, and the page says whether it replicates")


class LeaderboardMetric(Strict):
    key: str = Field(description="<metric>.<field>, or <arm>/<metric>.<field>")
    label: str | None = None
    stat: Stat = "last"
    agg: Literal["mean", "median"] = "mean"
    fmt: str = ".4g"
    nan: str | None = Field(None, description="what a NaN value means here, e.g. 'vacuous': "
                            "the cell counts and shows it instead of leaving it out")


class PlotSpec(Strict):
    key: str = Field(description="series to plot: <metric>.<field>")
    logy: bool = Field(False, description="logarithmic y axis")
    where: dict[str, Any] = Field(
        default_factory=dict, description="plot only cells with these config values (a "
        "list: any of them); arm: A or [A, B] keeps those arms")
    x: str | None = Field(None, description="a config key whose value multiplies the step on "
                          "the x axis (x = step × value), e.g. optimizer.lr")
    xlabel: str | None = Field(None, description="x-axis label (default: 'step × <x>')")


class LeaderboardTable(Strict):
    """One titled table of a leaderboard's results (docs/suites.md)."""

    title: str = Field(min_length=1, pattern=r"^[^\n]+$", description="one line, unique")
    where: dict[str, Any] = Field(
        default_factory=dict, description="cells with these config values (a list: any of "
        "them); arm: A or [A, B] keeps those arms")
    rows: list[str] | None = Field(None, description="row keys (default: the leaderboard's)")
    metrics: list[LeaderboardMetric] | None = Field(
        None, description="columns (default: the leaderboard's metrics)")


class LeaderboardSpec(Strict):
    rows: list[str] | None = None
    columns: str | None = None
    metrics: list[LeaderboardMetric] = Field(default_factory=list)
    plots: list[str | PlotSpec] = Field(default_factory=list)
    tables: list[LeaderboardTable] | None = Field(
        None, description="titled tables shown instead of the single main table")
    labels: dict[str, str] = Field(default_factory=dict,
                                   description="row key -> its column header")


class Compare(Strict):
    """The paired form: ``{key, a, b}`` pairs cells that differ only in ``key`` (a grid
    key); ``{arm: [a, b]}`` pairs two arms of the same cell; ``{stat: [a, b]}`` pairs two
    reductions of the same series (``[last, first]``: the change over the run)."""

    key: str | None = Field(None, description="the grid key whose values a and b are compared")
    a: Any = None
    b: Any = None
    arm: list[str] | None = Field(None, min_length=2, max_length=2,
                                  description="two arms of the same cell: [a, b]")
    stat: list[Stat] | None = Field(None, min_length=2, max_length=2,
                                    description="two reductions of the same series: [a, b]")

    @model_validator(mode="after")
    def _one_form(self) -> Compare:
        if sum(x is not None for x in (self.key, self.arm, self.stat)) != 1:
            raise ValueError("give one of 'key' with 'a' and 'b', 'arm: [a, b]' or "
                             "'stat: [a, b]'")
        if self.key is not None and (self.a is None or self.b is None):
            raise ValueError("'key' needs both 'a' and 'b'")
        if self.stat is not None and self.stat[0] == self.stat[1]:
            raise ValueError("'stat: [a, b]' needs two different reductions")
        if self.arm is not None and self.arm[0] == self.arm[1]:
            raise ValueError("'arm: [a, b]' needs two different arms")
        if self.key is not None and self.a == self.b:
            raise ValueError(f"'a' and 'b' are the same value ({self.a!r}); a comparison "
                             f"needs two different values of {self.key!r}")
        return self


class Trend(Strict):
    """The trend form: per trial seed (and values of every grid key that does not go with
    ``key``), the fit of the metric (its log under ``scale: log``; with ``compare: {arm:
    [a, b]}`` the difference of the two arms', or of their logs) against x, the cells' value
    of ``key`` (its log with ``x: log``): the least-squares slope or Spearman's ρ."""

    key: str = Field(description="the config key whose numeric value is x")
    x: Literal["linear", "log"] = Field("linear", description="x as is, or its log")
    fit: Literal["slope", "spearman"] = Field(
        "slope", description="least-squares slope of y on x, or Spearman's rank correlation")


class Condition(Strict):
    """What a claim tests about one metric: paired (``compare`` and ``'a < b'``) or one-sample
    (``'< c'``).  A claim is one; its ``also`` entries are more, tested on its cells."""

    metric: str = Field(description="<metric>.<field> or <arm>/<metric>.<field>")
    stat: Stat = "last"
    compare: Compare | None = None
    trend: Trend | None = Field(None, description="test a fit across cells ('> c' or '< c' "
                                "on the slope or Spearman's rho)")
    expect: str = Field(pattern=r"^\s*(a\s*[<>]\s*b|[<>]\s*[-+0-9.eE]+)\s*$",
                        description="'a < b' or 'a > b' (paired), '< c' or '> c' (one-sample)")
    scale: Literal["linear", "log"] = "linear"
    margin: float = Field(0.0, ge=0.0, allow_inf_nan=False,
                          description="the effect must clear this margin")
    where: dict[str, Any] | list[dict[str, Any]] | None = Field(
        None, description="the cells of this part (default: the claim's)")

    @model_validator(mode="after")
    def _form(self) -> Condition:
        paired = "a" in self.expect
        if paired and self.compare is None:
            raise ValueError(f"expect {self.expect!r} compares a and b: give 'compare'")
        if not paired and self.compare is not None and self.trend is None:
            raise ValueError(f"expect {self.expect!r} is one-sample: leave out 'compare' "
                             "or write 'a < b' / 'a > b'")
        if self.compare is not None and self.compare.stat is not None \
                and "stat" in self.model_fields_set:
            raise ValueError("'compare: {stat: [a, b]}' names the reductions: leave out 'stat'")
        if self.trend is not None and (paired or (self.compare is not None
                                                   and self.compare.arm is None)):
            raise ValueError("a trend is one-sample: expect '> c' or '< c' of its slope or "
                             "Spearman's rho (with 'compare: {arm: [a, b]}' at most: the "
                             "trend of a − b)")
        if not paired and self.scale == "log" and self.threshold <= 0 and self.trend is None:
            raise ValueError("scale: log needs a positive threshold c")
        return self

    @property
    def expects_greater(self) -> bool:
        return ">" in self.expect

    @property
    def threshold(self) -> float:
        """c of a one-sample test (0 for a paired one)."""
        text = self.expect.strip()
        return 0.0 if "a" in text else float(text[1:])


class Claim(Condition):
    """A paper's claim tested on a suite's cells (docs/claims.md)."""

    id: str = Field(pattern=r"^[A-Za-z0-9_]+$", max_length=MAX_NAME)
    source: str = Field("", description="paper and result, e.g. 'P1 Thm 4.1'")
    statement: str
    where: dict[str, Any] | list[dict[str, Any]] = Field(
        default_factory=dict, description="config values the cells must have (arm: A); a "
        "list value means any of them; a list of such maps means any of the maps")
    ci: Literal["t", "bootstrap", "rate"] | None = Field(
        None, description="95% interval: Student-t, bootstrap percentile or Clopper–Pearson "
        "(rate; one-sample claims on 0/1 outcomes); default: rate for a one-sample claim on a "
        "field whose unit is 0/1 (not read by 'mean'), else t")
    kind: Literal["claim", "sanity", "contrast", "corollary"] = Field(
        "claim", description="claim: a result the paper states (the verdict counts); sanity: "
        "holds by construction when the implementation is right (a check, listed under the "
        "table); contrast: a comparison the paper does not make (shown, not counted); "
        "corollary: follows from the counted claims it names in 'implied_by' (shown, not "
        "counted); none of the last three enters the verdict counts or the Holm family")
    implied_by: list[str] = Field(
        default_factory=list, description="a corollary's premises: the ids of the suite's "
        "counted claims it follows from")
    posthoc: str | None = Field(
        None, min_length=1, description="why the claim was added or changed after seeing data "
        "that decide it; marked in the table and left out of the multiplicity family")
    per_suite: str | None = Field(
        None, min_length=1, description="why the claim is quoted per suite: its trial seeds "
        "cannot decide it over its paper's family, which it leaves (its paper Holm column "
        "reads '— (per suite)')")
    also: list[Condition] = Field(
        default_factory=list, description="further tests, each paired or one-sample, on the "
        "claim's cells or their own 'where'; the claim holds when every part holds")
    control: list[Condition] = Field(
        default_factory=list, description="positive controls of an absence: the same "
        "measurement at design points where it must fire (each with its own 'where'); the "
        "claim holds only if every control holds too, else it reads inconclusive")

    @model_validator(mode="after")
    def _corollary(self) -> Claim:
        if (self.kind == "corollary") != bool(self.implied_by):
            raise ValueError("a corollary names the claims it follows from ('implied_by: "
                             "[id, ...]'), and only a corollary does (kind: corollary)")
        return self

    @model_validator(mode="after")
    def _controls_select(self) -> Claim:
        if any(c.where is None for c in self.control):
            raise ValueError("a control names its design points: give it a 'where'")
        return self

    @model_validator(mode="after")
    def _rate(self) -> Claim:
        if self.ci == "rate" and any(p.compare is not None or p.scale == "log"
                                     or p.trend is not None for p in self.parts):
            raise ValueError("ci: rate tests one-sample claims on 0/1 outcomes ('< c' or "
                             "'> c', scale linear) in every part")
        return self

    def interval(self, binary: bool) -> str:
        """The interval this claim (or part) gets: ``ci`` as given, else ``rate`` for a
        one-sample linear claim on a 0/1 outcome (``binary``: its field's unit is "0/1") read
        by a stat that keeps it 0 or 1 (not ``mean``), else ``t``."""
        if self.ci is not None:
            return self.ci
        one_sample = self.compare is None and self.trend is None and self.scale == "linear"
        return "rate" if binary and one_sample and self.stat != "mean" else "t"

    @property
    def parts(self) -> list[Claim]:
        """The claim and each ``also`` condition as claims (a condition without ``where``
        tests the claim's cells)."""
        tested = [{k: getattr(c, k) for k in Condition.model_fields
                   if not (k == "where" and c.where is None)} for c in self.also]
        return [self.model_copy(update={"also": [], "control": []})] + [
            self.model_copy(update={**t, "also": [], "control": []}) for t in tested]

    @property
    def controls(self) -> list[Claim]:
        """Each ``control`` condition as a claim (tested on its own ``where``)."""
        return [self.model_copy(update={**{k: getattr(c, k) for k in Condition.model_fields},
                                        "also": [], "control": []}) for c in self.control]

    @property
    def alternatives(self) -> list[dict[str, Any]]:
        """``where`` as a list of alternative filters (a single map is one alternative)."""
        return self.where if isinstance(self.where, list) else [self.where]


class RetiredClaim(Strict):
    """A claim removed after it had a published verdict: kept, with why and when, and the
    verdict it last had on each page (docs/claims.md, "Retired claims")."""

    id: str = Field(pattern=r"^[A-Za-z0-9_]+$", max_length=MAX_NAME)
    statement: str
    reason: str = Field(description="why the claim was removed")
    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$",
                        description="the commit that removed it")
    verdicts: dict[str, str] = Field(
        default_factory=dict, description="page (e.g. alignment_mid) -> the verdict it last "
        "had there, as published")


class RevisedVerdict(Strict):
    """A published verdict that a later rerun of the page's confirmation cells changed,
    recorded where the page predates the digests that find it (docs/claims.md, "Revised
    verdicts")."""

    id: str = Field(pattern=r"^[A-Za-z0-9_]+$", max_length=MAX_NAME)
    page: str = Field(pattern=r"^[A-Za-z0-9_]+$", description="the page, e.g. orbit_mid")
    before: str = Field(description="the verdict as first published, e.g. 'Holm: inconclusive'")
    after: str = Field(description="the verdict after the rerun")
    reason: str = Field(description="what changed the cells")
    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$",
                        description="the commit that republished the page")


class Suite(Strict):
    name: Name
    description: str = ""
    paper: Name | None = Field(
        None, description="the paper whose claims the suite tests, e.g. P1: Holm's correction "
        "also runs over every claim of the suites of that paper in the same folder")
    base: dict[str, Any]
    arms: dict[Name, dict[str, Any]] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    zip: list[dict[str, list[Any]]] = Field(default_factory=list)
    exclude: list[dict[str, Any]] = Field(default_factory=list)
    seeds: Seeds = 1
    confirm: ConfirmSeeds | None = Field(
        None, description="confirmation trial seeds of every profile that gives none, "
        "disjoint from the exploration seeds ('seeds')")
    replicate: ConfirmSeeds | None = Field(
        None, description="replication trial seeds of every profile that gives none, "
        "disjoint from 'seeds' and 'confirm'")
    profiles: dict[Name, Profile] = Field(default_factory=dict)
    leaderboard: LeaderboardSpec = Field(default_factory=LeaderboardSpec)
    claims: list[Claim] = Field(default_factory=list)
    retired: list[RetiredClaim] = Field(
        default_factory=list, description="claims removed after a published verdict")
    revised: list[RevisedVerdict] = Field(
        default_factory=list, description="published verdicts a rerun changed, recorded")
    executor: ComponentSpec | None = Field(
        None, description="default executor of the suite, e.g. {name: ray, num_gpus: 1}")
    loggers: list[ComponentSpec] = Field(
        default_factory=list, description="experiment trackers every run of the suite feeds, "
        "e.g. [tensorboard] or [{name: wandb, project: my-project}]")

    @field_validator("loggers", mode="before")
    @classmethod
    def _logger_names(cls, value: Any) -> Any:
        """A bare name stands for ``{name: <name>}``."""
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _arms(self) -> Suite:
        if len(self.arms) == 1:
            raise ValueError("'arms' needs two or more arms (leave it out for a single arm)")
        ids = [c.id for c in self.claims] + [r.id for r in self.retired]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"claim id {dup!r} appears twice; claim ids are unique, retired "
                             "ones included")
        counted = {c.id for c in self.claims if c.kind == "claim"}
        for c in self.claims:
            if wrong := [i for i in c.implied_by if i not in counted]:
                raise ValueError(f"claim {c.id!r}: implied_by names {wrong[0]!r}, which is not "
                                 f"a counted claim (kind: claim) of this suite; allowed: "
                                 f"{', '.join(sorted(counted))}")
        return self
