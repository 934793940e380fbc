"""Writes test fixtures as Lua files (a table of cases, each a table of
fields; tensors flat and row-major, in full double precision), written to a
temporary name and renamed. Used by the generators under tests/data."""
import os


def lua(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return "'%s'" % v
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "{" + ", ".join(lua(e) for e in v) + "}"
    return "{" + ", ".join("%.17g" % e for e in v.detach().reshape(-1).tolist()) + "}"


def write(path, header, cases):
    lines = ["-- " + h for h in header] + ["return {"]
    for case in cases:
        lines.append("  {")
        for k, v in case.items():
            lines.append("    %s = %s," % (k, lua(v)))
        lines.append("  },")
    lines.append("}")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
