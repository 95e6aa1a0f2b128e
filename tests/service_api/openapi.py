"""service/openapi.yaml against the server's route table (kiln serve
--routes): it parses as OpenAPI 3, every route served is documented and
every documented path is served, and each operation is well formed. No
OpenAPI validator is packaged for Debian 12 and the build has no network,
so the structure is checked here with PyYAML."""
import os
import re
import subprocess

import yaml

from servelib import KILN, SRC, check, fail

doc = yaml.safe_load(open(os.path.join(SRC, "service/openapi.yaml")))
check(str(doc.get("openapi", "")).startswith("3."), "openapi: 3.x")
check(isinstance(doc.get("info"), dict) and doc["info"].get("title") and doc["info"].get("version"),
      "info has title and version")
p = subprocess.run([KILN, "serve", "--routes"], capture_output=True, text=True, timeout=30)
check(p.returncode == 0, "kiln serve --routes")
served = set(tuple(l.split(" ", 1)) for l in p.stdout.splitlines() if l)
documented = set()
for path, ops in doc["paths"].items():
    for method, op in ops.items():
        if method in ("parameters", "summary", "description"):
            continue
        documented.add((method.upper(), path))
        if not isinstance(op.get("responses"), dict) or not op["responses"]:
            fail("%s %s has no responses" % (method, path))
        for code in op["responses"]:
            if not re.fullmatch(r"[1-5][0-9][0-9]|default", str(code)):
                fail("%s %s: bad response code %r" % (method, path, code))
        params = [x.get("name") if "$ref" not in x else x["$ref"].split("/")[-1]
                  for x in op.get("parameters", [])]
        for name in re.findall(r"\{(\w+)\}", path):
            if name not in params:
                fail("%s %s: path parameter {%s} not declared" % (method, path, name))
check(served == documented, "the documented routes are exactly those served\n  served only: %s\n"
      "  documented only: %s" % (sorted(served - documented), sorted(documented - served)))


def refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


for r in refs(doc):
    if not r.startswith("#/"):
        fail("external $ref %s" % r)
    node = doc
    for part in r[2:].split("/"):
        if not isinstance(node, dict) or part not in node:
            fail("$ref %s does not resolve" % r)
        node = node[part]
check(True, "every $ref resolves")
