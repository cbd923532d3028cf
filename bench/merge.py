"""Puts PyTorch's figures beside vkprism's from the same run.

    python3 bench/merge.py VKPRISM.json TORCH.json RESULTS.json [BENCHMARKS.md]
    python3 bench/merge.py --table RESULTS.json BENCHMARKS.md    (regenerate the table only)

Writes RESULTS.json: a JSON array of {case, shape, variant, coopmat, value, reference, ratio,
unit, sm_clock_mhz, reference_sm_clock_mhz, reference_name, method, reference_method} (how each
side was timed), one per reference where a figure has several (a network beside PyTorch eager
and beside a CUDA graph of it); `ratio` > 1 means vkprism is ahead
(throughput / the reference's throughput, or the reference's time / vkprism's time). With a
fourth argument, replaces the text between the `<!-- results -->` markers of that file with the
tables generated from RESULTS.json.
"""
import json, sys

TIME_UNITS = {"us", "ms"}


def dtype_of(variant):
    if "_int8" in variant:
        return "int8"
    for d in ("fp32", "fp16", "bf16", "int8"):
        if variant.startswith(d):
            return d
    return variant


def merge(ours, refs):
    by_key = {}
    for r in refs:
        by_key.setdefault((r["case"], r["shape"], r["dtype"]), []).append(r)
    out = []
    for r in ours:
        for ref in by_key.get((r["case"], r["shape"], dtype_of(r["variant"])), [None]):
            out.append(merged(r, ref))
    return out


def merged(r, ref):
    """Our record `r` beside reference `ref` (None where there is none)."""
    rv = ref["value"] if ref else None
    if rv is None:
        ratio = None
    elif r["unit"] in TIME_UNITS:
        ratio = rv / r["value"]
    else:
        ratio = r["value"] / rv
    return dict(case=r["case"], shape=r["shape"], variant=r["variant"], coopmat=r["coopmat"],
                value=round(r["value"], 4), reference=None if rv is None else round(rv, 4),
                ratio=None if ratio is None else round(ratio, 3), unit=r["unit"],
                sm_clock_mhz=r["sm_clock_mhz"],
                reference_sm_clock_mhz=ref["sm_clock_mhz"] if ref else None,
                reference_name=ref["reference"] if ref else None,
                method=r.get("method"),
                reference_method=ref.get("method") if ref else None)


def table(records):
    lines = ["| case | shape | variant | coopmat | vkprism | reference | ratio | SM clock (vkprism / ref) | timed (vkprism / ref) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        ref = "-" if r["reference"] is None else f'{r["reference"]:.3f} ({r["reference_name"]})'
        ratio = "-" if r["ratio"] is None else f'{r["ratio"]:.2f}×'
        lines.append(f'| {r["case"]} | {r["shape"]} | {r["variant"]} | {"yes" if r["coopmat"] else "no"} | '
                     f'{r["value"]:.3f} {r["unit"]} | {ref} | {ratio} | '
                     f'{r["sm_clock_mhz"]} / {r["reference_sm_clock_mhz"]} MHz | '
                     f'{r.get("method") or "-"} / {r.get("reference_method") or "-"} |')
    return "\n".join(lines)


def write_table(records, path):
    doc = open(path).read()
    start, end = "<!-- results -->", "<!-- /results -->"
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    open(path, "w").write(f"{head}{start}\n{table(records)}\n{end}{tail}")


def main():
    if sys.argv[1] == "--table":
        write_table(json.load(open(sys.argv[2])), sys.argv[3])
        return
    ours, refs = (json.load(open(p)) for p in sys.argv[1:3])
    records = merge(ours, refs)
    with open(sys.argv[3], "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
    if len(sys.argv) > 4:
        write_table(records, sys.argv[4])
    print(table(records))


if __name__ == "__main__":
    main()
