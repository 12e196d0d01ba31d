"""A self-contained HTML report (plots inlined as PNG) and the figures the app's Results tab shows."""

from __future__ import annotations

import base64
import html
import io
from datetime import datetime, timezone
from pathlib import Path

from .aggregate import ALL, Aggregate


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and in tests
    import matplotlib.pyplot as plt

    return plt


def _errorbars(ax, labels, values, lows, highs, **kw):
    import numpy as np

    values = np.array([np.nan if v is None else v for v in values], float)
    lo = np.array([np.nan if v is None else v for v in lows], float)
    hi = np.array([np.nan if v is None else v for v in highs], float)
    yerr = np.vstack([np.nan_to_num(values - lo), np.nan_to_num(hi - values)])
    ax.errorbar(range(len(labels)), values, yerr=yerr, fmt="o", capsize=4, **kw)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right")


def figures(agg: Aggregate, db) -> dict:
    """name -> matplotlib Figure. Empty data gives a figure that says so, never a crash."""
    plt = _plt()
    figs = {}

    def empty(title):
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.text(0.5, 0.5, "no data yet", ha="center", va="center")
        ax.set_axis_off()
        ax.set_title(title)
        return fig

    sp = agg.tables["speedup"]
    sp = sp[sp["speedup"].notna()] if len(sp) else sp
    if len(sp):
        fig, ax = plt.subplots(figsize=(7, 3.5))
        _errorbars(ax, list(sp["prompt_id"]), list(sp["speedup"]), list(sp["ci_low"]), list(sp["ci_high"]))
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_ylabel("speed-up (x)")
        ax.set_title(f"Speed-up per prompt, 95% CI ({agg.speed['source']})", fontsize=9)
        fig.tight_layout()
        figs["speedup"] = fig
    else:
        figs["speedup"] = empty("Speed-up per prompt")

    pr = agg.tables["pass_rates"]
    pr = pr[(pr["prompt_id"] == ALL) & pr["pass_rate"].notna()] if len(pr) else pr
    if len(pr):
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for offset, (path, color) in zip((-0.12, 0.12), (("ordinary", "tab:blue"), ("assisted", "tab:orange"))):
            g = pr[pr["path"] == path]
            x = [i + offset for i in range(len(g))]
            ax.errorbar(x, g["pass_rate"], yerr=[g["pass_rate"] - g["ci_low"], g["ci_high"] - g["pass_rate"]],
                        fmt="o", capsize=4, color=color, label=path)
            ax.set_xticks(range(len(g)))
            ax.set_xticklabels(list(g["criterion"]), rotation=15, ha="right")
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("pass rate")
        ax.legend()
        ax.set_title("Pass rate per criterion and path, cluster-aware 95% CI (pairs, raters)", fontsize=9)
        fig.tight_layout()
        figs["pass_rates"] = fig
    else:
        figs["pass_rates"] = empty("Pass rates")

    ag, ka = agg.tables["agreement"], agg.tables["prescreen_agreement"]
    def num(v):
        return 0.0 if v is None or v != v else float(v)  # None / NaN (undefined) drawn as 0

    if len(ag) and (ag["alpha"].notna().any() or ka["kappa"].notna().any()):
        fig, ax = plt.subplots(figsize=(7, 3.2))
        items = list(ag["item"])
        ax.bar([i - 0.2 for i in range(len(items))], [num(v) for v in ag["alpha"]], width=0.4, label="Krippendorff alpha (raters)")
        kap = ka.set_index("criterion")["kappa"].to_dict()

        ax.bar([i + 0.2 for i in range(len(items))], [num(kap.get(i)) for i in items],
               width=0.4, label="Cohen kappa (pre-screen vs raters)")
        ax.set_xticks(range(len(items)))
        ax.set_xticklabels(items, rotation=15, ha="right")
        ax.axhline(0, color="grey", lw=0.8)
        ax.legend(fontsize=8)
        ax.set_title("Agreement (missing values drawn as 0)", fontsize=9)
        fig.tight_layout()
        figs["agreement"] = fig
    else:
        figs["agreement"] = empty("Agreement")

    rows = list(db.query(
        "SELECT path, new_tokens, generate_seconds FROM generations WHERE status = 'ok' AND generate_seconds IS NOT NULL AND live = 0"))
    if rows:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for path, color in (("ordinary", "tab:blue"), ("assisted", "tab:orange"), ("fallback", "tab:red")):
            rs = [r for r in rows if r["path"] == path]
            if rs:
                ax.scatter([r["new_tokens"] for r in rs], [r["generate_seconds"] for r in rs], s=12, alpha=0.6, color=color, label=path)
        ax.set_xlabel("new tokens")
        ax.set_ylabel("generate() seconds")
        ax.legend()
        ax.set_title("Seconds against new tokens (every stored run)", fontsize=9)
        fig.tight_layout()
        figs["seconds_vs_tokens"] = fig
    else:
        figs["seconds_vs_tokens"] = empty("Seconds against new tokens")

    acc = agg.tables["speedup"]
    acc = acc[acc["acceptance_rate"].notna()] if len(acc) else acc
    if len(acc):
        fig, ax = plt.subplots(figsize=(7, 3))
        ax.bar(list(acc["prompt_id"]), list(acc["acceptance_rate"]), color="tab:green")
        ax.set_ylim(0, 1)
        ax.set_ylabel("acceptance rate")
        ax.set_title("Draft acceptance per prompt", fontsize=9)
        plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
        fig.tight_layout()
        figs["acceptance"] = fig
    else:
        figs["acceptance"] = empty("Draft acceptance per prompt")
    return figs


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    _plt().close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def verdict_html(agg: Aggregate) -> str:
    v = agg.verdict
    color = {"KEEP": "#1a7f37", "DROP": "#cf222e"}.get(v["decision"], "#9a6700")
    items = "".join(
        f"<li><b>{html.escape(c['name'])}</b>: {'ok' if c['ok'] else ('FAIL' if c['ok'] is False else 'unknown')}"
        f" — {html.escape(c['reason'])}</li>"
        for c in v["conditions"]
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in agg.notes)
    return (f'<div class="verdict"><h2 style="color:{color}">Verdict: {html.escape(v["decision"])}</h2><ul>{items}</ul>'
            + (f"<p>Notes:</p><ul>{notes}</ul>" if notes else "") + "</div>")


def build_report(db, out_dir: Path, agg: Aggregate | None = None) -> Path:
    """Write out_dir/index.html: verdict, plots and every table. Text from raters is escaped (inert)."""
    from .aggregate import aggregate

    agg = agg or aggregate(db)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figs = figures(agg, db)
    plots = "".join(f'<figure><img alt="{html.escape(k)}" src="data:image/png;base64,{_png(f)}"></figure>' for k, f in figs.items())
    tables = "".join(
        f"<h3>{html.escape(name)}</h3>" + (df.to_html(index=False, escape=True, na_rep="n/a", float_format=lambda x: f"{x:.3f}") if len(df) else "<p>no data</p>")
        for name, df in agg.tables.items()
    )
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>evalkit report</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse;font-size:13px;margin-bottom:1em}}td,th{{border:1px solid #ccc;padding:2px 6px}}
img{{max-width:100%}}.verdict{{border:1px solid #ccc;padding:0.5em 1em;border-radius:6px}}</style></head><body>
<h1>evalkit: does the draft model make writing requests faster without hurting the content?</h1>
<p>Generated {datetime.now(timezone.utc).isoformat(timespec="seconds")} from the database. Speed-up source: {html.escape(str(agg.speed['source']))}.</p>
{verdict_html(agg)}<h2>Plots</h2>{plots}<h2>Tables</h2>{tables}</body></html>"""
    path = out_dir / "index.html"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path
