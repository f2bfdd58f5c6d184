"""`foodtaster contract ...`: what a dataset's contract says, as the engine reads it, and a
JSON Schema as a pandera module to start from. No lake, no JVM: the contract only."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from foodtaster.ops.terminal import json_lines, print_table, printable

ROW_COLUMNS = ("path", "type", "required", "nullable", "checks", "key", "personal")


def add_contract_commands(commands: argparse._SubParsersAction) -> None:
    contract = commands.add_parser("contract", help="a dataset's contract: show, check, import as pandera, "
                                                    "infer from messages")
    verbs = contract.add_subparsers(dest="verb", required=True)
    show = verbs.add_parser("show", help="the effective contract of a dataset, one row a path")
    show.add_argument("dataset", help="the dataset's name in pipeline.yaml")
    show.add_argument("--json", action="store_true", help="JSON lines, one a row, for scripts")
    show.set_defaults(run=contract_show)
    imports = verbs.add_parser("import", help="a JSON Schema (or an AsyncAPI message's payload) as an "
                                              "equivalent pandera module, printed")
    imports.add_argument("schema", help="the JSON Schema file (draft-07, 2019-09 or 2020-12), or "
                                        "asyncapi.yaml:<message>")
    imports.add_argument("--name", help="the message model's class name (default: from the title or file)")
    imports.set_defaults(run=contract_import)
    check = verbs.add_parser("check", help="judge a few messages by a dataset's contract, locally (Spark, "
                                           "no Airflow, no lake), and print each one's reasons")
    check.add_argument("dataset", help="the dataset's name in pipeline.yaml")
    check.add_argument("file", help="a file of JSON lines, one message a line")
    check.add_argument("--limit", type=int, default=1000, help="judge at most this many lines (default 1000)")
    check.add_argument("--lake", help="the lake whose mask key masks personal values, as the job's "
                                      "(default: FOODTASTER_LAKE or ./data/lake)")
    check.set_defaults(run=contract_check)
    infer = verbs.add_parser("infer", help="a first JSON Schema (2020-12) from sample messages, printed; "
                                           "what the sample could not tell on stderr")
    infer.add_argument("files", nargs="+", help="files of JSON lines (.gz allowed), e.g. a day of messages")
    infer.add_argument("--title", default="Inferred", help="the schema's title (the contract's name)")
    infer.add_argument("--out", help="write the schema to this file instead of printing it")
    infer.set_defaults(run=contract_infer)


def _yes(flag: bool) -> str:
    return "yes" if flag else ""


def _table_rows(rows: list) -> list[tuple[str, ...]]:
    """One line a check: a slot's first check on its row, the others on the lines below it;
    an implied object's required and nullable are its fields' (left blank)."""
    out: list[tuple[str, ...]] = []
    for r in rows:
        implied = r.type.endswith("(implied)")
        checks = [printable(c) for c in r.checks] or [""]
        out.append((printable(r.path), r.type, "" if implied else _yes(r.required),
                    "" if implied else _yes(r.nullable), checks[0], _yes(r.key), _yes(r.personal)))
        out.extend(("", "", "", "", more, "", "") for more in checks[1:])
    return out


def contract_show(args: argparse.Namespace) -> int:
    from foodtaster.contract.describe import check_words, describe, strict_words
    from foodtaster.contract.model import frame_rule_id
    from foodtaster.registry import get_dataset

    config = get_dataset(args.dataset)
    contract = config.read_contract()
    rows = describe(contract)
    if args.json:
        json_lines([dataclasses.asdict(row) for row in rows])
        return 0
    print(f"{config.name}: {contract.source or config.contract}; unknown fields "
          f"{strict_words(contract.strict)}")
    print_table(ROW_COLUMNS, _table_rows(rows), empty="(no field)")
    frame = [frame_rule_id(c.statistics) if c.name == "conditional" else check_words(c)
             for c in contract.frame_checks]
    for words in frame:
        print(f"across fields: {printable(words)}")
    if len(contract.key) > 1:
        print(f"key: ({', '.join(printable(str(p)) for p in contract.key)})")
    for expectation in contract.expectations:
        kwargs = ", ".join(f"{k}={v}" for k, v in expectation.kwargs)
        print(f"batch gate: {printable(expectation.name)}: {expectation.type}({printable(kwargs)})")
    if contract.passed_over:
        print(f"passed over (not judged): {printable(', '.join(contract.passed_over))}")
    return 0


def contract_import(args: argparse.Namespace) -> int:
    """A JSON Schema, or an AsyncAPI message's payload (`asyncapi.yaml:<message>`), as pandera."""
    from foodtaster.contract.to_pandera import pandera_module, pandera_module_of

    file, _, part = args.schema.partition(".yaml:") if ".yaml:" in args.schema else (args.schema, "", "")
    file = file + ".yaml" if part else file
    if not file.endswith((".yaml", ".yml")):
        sys.stdout.write(pandera_module(args.schema, name=args.name))
        return 0
    from foodtaster.contract.documents import read_document
    from foodtaster.contract.model import ContractError

    contract = read_document(file, part or None)
    if contract.schema is None:
        raise ContractError(f"{file}: an ODCS contract is judged as it is (contract: {file}); import turns a "
                            "JSON Schema or an AsyncAPI message's payload into a pandera module")
    sys.stdout.write(pandera_module_of(contract.schema.document, args.name or contract.name,
                                       args.schema))
    return 0


def contract_infer(args: argparse.Namespace) -> int:
    """The schema the sample suggests, to review and save as a dataset's contract."""
    import json
    from pathlib import Path

    from foodtaster.contract.infer import infer, read_sample
    from foodtaster.errors import NotFound, UsageError

    missing = [f for f in args.files if not Path(f).is_file()]
    if missing:
        raise NotFound(f"no such file: {', '.join(missing)}")
    try:
        inferred = infer(read_sample(args.files), title=args.title)
    except ValueError as err:
        raise UsageError(str(err)) from err
    text = json.dumps(inferred.schema, indent=2, ensure_ascii=False) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    print(f"inferred from {inferred.messages} messages; review before use:", file=sys.stderr)
    for note in inferred.notes:
        print(f"  {printable(note)}", file=sys.stderr)
    return 0


def contract_check(args: argparse.Namespace) -> int:
    """Each line of the file judged as the job judges it: `ok`, or its reasons; 0 when every
    line passes, 1 when one does not."""
    from pathlib import Path

    from foodtaster.errors import NotFound, UsageError
    from foodtaster.lake_paths import lake_root
    from foodtaster.registry import get_dataset

    config = get_dataset(args.dataset)
    contract = config.read_contract()  # a contract that cannot be read is refused before Spark starts
    file = Path(args.file)
    if not file.is_file():
        raise NotFound(f"{file} is no file of JSON lines")
    if args.limit < 1:
        raise UsageError("--limit is a number of lines, at least 1")
    from pyspark.sql import functions as F

    from foodtaster.engine.batch.ingest import read_lines
    from foodtaster.engine.judging.judging import validate_lines
    from foodtaster.engine.judging.masking import mask_reasons
    from foodtaster.engine.spark import build_session
    from foodtaster.privacy import Masker, key_source

    masker = Masker.for_dataset(config, args.lake or lake_root(), contract)
    spark = build_session("foodtaster-contract-check")
    try:
        lines = read_lines(spark, str(file.resolve())).orderBy("_split_start", "_row_id").limit(args.limit)
        judged = validate_lines(lines, contract, config.max_message_bytes)
        # a person reads these reasons: their personal values masked as the job writes them
        masked = mask_reasons(judged.select(F.col("_reasons").alias("reasons")),
                              masker)
        rows = masked.collect()
    finally:
        spark.stop()
    failed = 0
    for number, row in enumerate(rows, start=1):
        if not row["reasons"]:
            print(f"line {number}: ok")
            continue
        failed += 1
        print(f"line {number}: {len(row['reasons'])} reason(s)")
        for reason in row["reasons"]:
            print(f"  {printable(reason.rule)}  at {printable(reason.column or '(the line)')}: "
                  f"{printable(reason.message)}")
    print(f"{len(rows)} judged, {len(rows) - failed} ok, {failed} with reasons ({config.name}, "
          f"{contract.source or config.contract})")
    # The same value masks alike only under the same key: say which one, to compare with the job's.
    print(f"personal values masked with {key_source(args.lake or lake_root())}" if masker.paths
          else f"{config.name} marks nothing personal: no value masked")
    return 1 if failed else 0
