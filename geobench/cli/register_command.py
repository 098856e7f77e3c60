"""``geobench register SUITE [--profile P]``: freeze a profile's claims in its registration
file before its confirmation seeds run, and in a second file before its replication seeds
run (``geobench.study.registered``; docs/claims.md, "Registrations")."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from geobench.cli.command import Command
from geobench.contract.manager import registry
from geobench.records import DEFAULT_STORE
from geobench.study import Study
from geobench.study.registered import (
    Registered,
    read_registration,
    registration_path,
    registration_record,
)
from geobench.suite import load_suite
from geobench.suite.seeds import KEYS, NAMES
from geobench.suite.yamlio import SuiteError


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("suite", help="path of the suite YAML file")
    p.add_argument("--profile", default="smoke", help="profile to register (default: smoke)")
    p.add_argument("--store", default=DEFAULT_STORE,
                   help=f"the store whose confirmation cells must not exist yet ({DEFAULT_STORE})")
    p.add_argument("--replace", action="store_true",
                   help="replace a registration of other claims or seeds (before any of its "
                        "cells ran)")


def register(args: argparse.Namespace) -> int:
    loaded = load_suite(args.suite)
    study = Study(loaded, registry(), args.profile)
    where = f"{args.suite}: profile {args.profile!r}"
    if not loaded.suite.claims:
        raise SuiteError(f"{where}: the suite declares no claims to register")
    if not study.has_confirmation:
        raise SuiteError(f"{where} declares no confirmation seeds (confirm:); a registration "
                         "freezes the claims that those seeds decide")
    _register(study, args, "confirm", None)
    if study.has_replication:
        main = read_registration(loaded, args.profile)
        _register(study, args, "replicate", None if main is None else main.sha256)
    return 0


def _register(study: Study, args: argparse.Namespace, which: Registered,
              replicates: str | None) -> None:
    """Write the registration of the profile's ``which`` seeds unless it is there unchanged;
    refused where it differs (without ``--replace``) or where a cell of those seeds ran."""
    from geobench.run.provenance import provenance
    from geobench.run.store import Store

    loaded, profile = study.loaded, study.profile
    where = f"{args.suite}: profile {profile!r}"
    name = NAMES[which]
    path = registration_path(loaded, profile, which)
    earlier = read_registration(loaded, profile, which)
    if earlier is not None and earlier.same_claims(loaded, profile):
        print(f"{path}: registered already, on {earlier.record['registered']} (unchanged)")
        return
    if earlier is not None and not args.replace:
        raise SuiteError(f"{path}: registers other claims or {name} seeds of {where} "
                         f"(on {earlier.record['registered']}); replace it with --replace "
                         f"only if none of its {name} cells ran")
    ids = [c.id for c in study.seed_cells(which)]
    if Path(args.store).exists():
        store = Store(args.store, read_only=True)
        try:
            ran = len(store.cells(ids))
        finally:
            store.close()
        if ran:
            raise SuiteError(f"{where}: {ran} of its {len(ids)} {name} cells are stored in "
                             f"{args.store} already; a registration comes before them "
                             f"(declare new {name} seeds in {KEYS[which]}:)")
    prov = provenance()
    code = None if prov["git_sha"] is None else \
        prov["git_sha"] + ("-dirty" if prov["git_dirty"] else "")
    record = registration_record(loaded, profile, study.cells, code, time.time(), which,
                                 replicates)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {path}: the definitions of {len(record['claims'])} claims and "
          f"{len(record[which])} {name} seeds; commit it before `geobench run "
          f"{args.suite} --profile {profile} --seeds {which}`")


COMMANDS = [
    Command("register", "freeze a profile's claims before its confirmation seeds run",
            _arguments, register),
]
