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
    p.add_argument("--replace", action="store_true",
                   help="replace a registration of other claims or seeds (before any of its "
                        "confirmation cells ran)")


def register(args: argparse.Namespace) -> int:
    from geobench.run.provenance import provenance
    from geobench.run.store import Store

    loaded = load_suite(args.suite)
    study = Study(loaded, registry(), args.profile)
    where = f"{args.suite}: profile {args.profile!r}"
    if not loaded.suite.claims:
        raise SuiteError(f"{where}: the suite declares no claims to register")
    if not study.has_confirmation:
        raise SuiteError(f"{where} declares no confirmation seeds (confirm:); a registration "
                         "freezes the claims that those seeds decide")
    path = registration_path(loaded, args.profile)
    earlier = read_registration(loaded, args.profile)
    if earlier is not None and earlier.same_claims(loaded, args.profile):
        print(f"{path}: registered already, on {earlier.record['registered']} (unchanged)")
        return 0
    if earlier is not None and not args.replace:
        raise SuiteError(f"{path}: registers other claims or confirmation seeds of {where} "
                         f"(on {earlier.record['registered']}); replace it with --replace "
                         "only if none of its confirmation cells ran")
    confirm = [c.id for c in study.seed_cells("confirm")]
    if Path(args.store).exists():
        store = Store(args.store, read_only=True)
        try:
            ran = len(store.cells(confirm))
        finally:
            store.close()
        if ran:
            raise SuiteError(f"{where}: {ran} of its {len(confirm)} confirmation cells are "
                             f"stored in {args.store} already; a registration comes before "
                             "them (declare new confirmation seeds in confirm:)")
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
