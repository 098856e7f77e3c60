"""``geobench register SUITE [--profile P]``: freeze a profile's claims in its registration
file before its confirmation seeds run (``geobench.study.registered``; docs/claims.md,
"Registrations")."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from geobench.cli.command import Command
from geobench.contract.manager import registry
from geobench.records import DEFAULT_STORE
from geobench.study import Study
from geobench.study.registered import read_registration, registration_path, registration_record
from geobench.suite import load_suite
from geobench.suite.yamlio import SuiteError


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("suite", help="path of the suite YAML file")
    p.add_argument("--profile", default="smoke", help="profile to register (default: smoke)")
    p.add_argument("--store", default=DEFAULT_STORE,
                   help=f"the store whose confirmation cells must not exist yet ({DEFAULT_STORE})")


def register(args: argparse.Namespace) -> int:
    from geobench.run.provenance import provenance
    from geobench.run.store import stored_configs

    loaded = load_suite(args.suite)
    study = Study(loaded, registry(), args.profile)
    where = f"{args.suite}: profile {args.profile!r}"
    if not loaded.suite.claims:
        raise SuiteError(f"{where}: the suite declares no claims to register")
    if not study.has_confirmation:
        raise SuiteError(f"{where} declares no confirmation seeds (confirm:); a registration "
                         "freezes the claims that those seeds decide")
    confirm = {c.id for c in study.seed_cells("confirm")}
    stored = {cid for cid, _, _ in stored_configs(args.store)} if Path(args.store).exists() \
        else set()
    if ran := len(confirm & stored):
        raise SuiteError(f"{where}: {ran} of its {len(confirm)} confirmation cells are stored "
                         f"in {args.store} already; a registration comes before them (declare "
                         "new confirmation seeds in confirm:)")
    path = registration_path(loaded, args.profile)
    earlier = read_registration(loaded, args.profile)
    if earlier is not None and earlier.same_claims(loaded, args.profile):
        print(f"{path}: registered already, on {earlier.record['registered']} (unchanged)")
        return 0
    prov = provenance()
    code = None if prov["git_sha"] is None else \
        prov["git_sha"] + ("-dirty" if prov["git_dirty"] else "")
    record = registration_record(loaded, args.profile, study.cells, code, time.time())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {path}: the definitions of {len(record['claims'])} claims and "
          f"{len(record['confirm'])} confirmation seeds; commit it before `geobench run "
          f"{args.suite} --profile {args.profile} --seeds confirm`")
    return 0


COMMANDS = [
    Command("register", "freeze a profile's claims before its confirmation seeds run",
            _arguments, register),
]
