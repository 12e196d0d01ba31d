"""A self-contained HTML report (plots inlined as PNG) and the figures the app's Results tab shows."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

from ..aggregate import ALL, Aggregate, Decision
from ..records import GenerationPath
from .provenance import WITHHELD, Provenance, build_provenance, environment_line, model_line, scope_items


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
        ax.set_title(f"Speed-up per prompt, 95% CI ({agg.speed.source})", fontsize=9)
        fig.tight_layout()
        figs["speedup"] = fig
    else:
        figs["speedup"] = empty("Speed-up per prompt")

    pr = agg.tables["pass_rates"]
    pr = pr[(pr["prompt_id"] == ALL) & pr["pass_rate"].notna()] if len(pr) else pr
    if len(pr):
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for offset, (path, color) in zip((-0.12, 0.12), ((GenerationPath.ORDINARY, "tab:blue"),
                                                          (GenerationPath.ASSISTED, "tab:orange"))):
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
        "SELECT path, new_tokens, generate_seconds FROM generations WHERE status = 'ok' AND generate_seconds IS NOT NULL "
        "AND live = 0 AND batch_size = 1"))  # a batched call's seconds serve all its requests: the batch plot shows them
    if rows:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for path, color in ((GenerationPath.ORDINARY, "tab:blue"), (GenerationPath.ASSISTED, "tab:orange"),
                            (GenerationPath.FALLBACK, "tab:red")):
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

    bt = agg.tables["batch"]
    if len(bt) and bt["total_tokens_per_second"].notna().any():
        fig, ax = plt.subplots(figsize=(7, 3.5))
        o = bt[bt["path"] == GenerationPath.ORDINARY]
        ax.errorbar(o["batch_size"], o["total_tokens_per_second"],
                    yerr=[(o["total_tokens_per_second"] - o["total_ci_low"]).fillna(0),
                          (o["total_ci_high"] - o["total_tokens_per_second"]).fillna(0)],
                    fmt="o-", capsize=4, color="tab:blue", label="ordinary at batch size")
        a = bt[bt["path"] == GenerationPath.ASSISTED]
        if len(a):
            a = a.iloc[0]
            ax.axhline(a["total_tokens_per_second"], color="tab:orange", label="assisted at batch 1")
            if a["total_ci_low"] == a["total_ci_low"] and a["total_ci_low"] is not None:
                ax.axhspan(a["total_ci_low"], a["total_ci_high"], color="tab:orange", alpha=0.2)
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(o["batch_size"]))
        ax.set_xticklabels([str(b) for b in o["batch_size"]])
        ax.set_xlabel("batch size (ordinary path)")
        ax.set_ylabel("total new tokens / s")
        ax.legend(fontsize=8)
        ax.set_title("Total throughput by batch size, 95% CI (assisted runs one request at a time)", fontsize=9)
        fig.tight_layout()
        figs["batch"] = fig

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


def verdict_html(agg: Aggregate, prov: Provenance | None = None) -> str:
    """The verdict and its conditions; with `prov`, each condition names the runs behind it, and one whose
    figure has no stored run behind it is withheld."""
    v = agg.verdict

    def conditions(verdict) -> str:
        items = []
        for c in verdict.conditions:
            status = "ok" if c.ok else ("FAIL" if c.ok is False else "unknown")
            reason = html.escape(c.reason)
            if prov is not None:
                ids = prov.for_condition(c.name)
                if ids:
                    reason += f' <span class="src">[{html.escape(prov.cite(ids))}]</span>'
                elif c.ok is not None:
                    reason = html.escape(WITHHELD)
            items.append(f"<li><b>{html.escape(c.name)}</b>: {status} — {reason}</li>")
        return "<ul>" + "".join(items) + "</ul>"

    color = {Decision.KEEP: "#1a7f37", Decision.DROP: "#cf222e"}.get(v.decision, "#9a6700")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in agg.notes)
    label = f" ({html.escape(v.label)})" if v.interim else ""
    claim = f"<p>{html.escape(v.claim)}</p>" if v.claim else ""
    if same := (agg.identical_line() if hasattr(agg, "identical_line") else ""):
        claim += f'<p class="identical">{html.escape(same)}</p>'
    study = getattr(agg, "study", None)
    head = f'<p class="study">Shown: {html.escape(study.label())}.</p>' if study is not None else ""
    frozen = getattr(agg, "frozen", None)
    if frozen is not None:
        label = f" (frozen {html.escape(frozen.completed_at)}, when the planned sample completed)"
    after = getattr(agg, "after", None)
    later = (f'<div class="after"><h3>After the decision (not the decision): {html.escape(after.decision)}</h3>'
             f"<p>The same analysis on the data as it is now, with the ratings, corrections and gold answers stored "
             f"since the decision; it never changes the decision above.</p>{conditions(after)}</div>"
             if after is not None else "")
    return (f'<div class="verdict">{head}<h2 style="color:{color}">Verdict: {html.escape(v.decision)}{label}</h2>'
            f'{claim}{conditions(v)}{later}' + (f"<p>Notes:</p><ul>{notes}</ul>" if notes else "") + "</div>")


def provenance_html(prov: Provenance) -> str:
    """The provenance block: figures with their runs, experiments, environment, scope, prompts, gate."""
    e = html.escape
    figs = "".join(
        f"<li><b>{e(f.name)}</b>: " + (f"{e(f.value)} <span class=\"src\">[{e(prov.cite(f.experiments))}]</span>"
                                       if f.value is not None else e(f.note or WITHHELD)) + "</li>"
        for f in prov.figures)
    exp_rows = "".join(
        f"<tr><td>{x.id}</td><td>{e(x.kind)}</td><td>{e(', '.join(x.used_for))}</td><td>{e(x.started)}</td>"
        f"<td>{e(x.ended or 'no records')}</td><td>{x.records}</td><td><code>{e(x.config_hash)}</code></td>"
        f"<td><code>{e(x.gate_hash or 'none')}</code></td></tr>"
        for x in prov.experiments)
    env = "".join(
        f"<li>experiment {x.id}: {e(environment_line(x))}<ul><li>target: {e(model_line(x.target))}</li>"
        f"<li>draft: {e(model_line(x.draft))}</li></ul></li>"
        for x in prov.experiments)
    scope = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in scope_items(prov.scope))
    prompts = "".join(
        f"<tr><td>{e(p.id)}</td><td><code>{e(', '.join(p.hashes) or 'not recorded')}</code></td><td>{e(p.source)}</td>"
        f"<td>{e(p.material)}</td><td>{e(p.task)}</td><td>{'' if p.max_new_tokens is None else p.max_new_tokens}</td></tr>"
        for p in prov.prompts)
    if prov.gate:
        g = prov.gate
        gate = (f"<p>Frozen with experiment {g['experiment_id']} ({e(g['path'])}), hash <code>{e(g['hash'])}</code>"
                f"{'' if g['hash_ok'] else ' <b>does not match its text</b>'}.</p><pre>{e(g['text'])}</pre>")
    else:
        gate = "<p>No experiment with a frozen release gate.</p>"
    notes = "".join(f"<li>{e(n)}</li>" for n in prov.notes)
    return (f'<div class="provenance"><h2>Provenance</h2><p>Built by evalkit {e(prov.evalkit)} at {e(prov.generated_at)} '
            f"from the stored rows. A figure with no stored run behind it is not printed.</p>"
            f"<h3>Figures and the runs behind them</h3><ul>{figs}</ul>"
            f"<h3>Experiments</h3><table><tr><th>id</th><th>kind</th><th>used for</th><th>started</th><th>ended (last record)</th>"
            f"<th>records</th><th>config hash</th><th>gate hash</th></tr>{exp_rows}</table>"
            f"<h3>Environment and models</h3><ul>{env or '<li>no experiment</li>'}</ul>"
            f"<h3>Sample scope</h3><table>{scope}</table>"
            f"<h3>Prompts</h3><table><tr><th>id</th><th>hash</th><th>source</th><th>material</th><th>task</th>"
            f"<th>max new tokens</th></tr>{prompts}</table>"
            f"<h3>Release gate</h3>{gate}" + (f"<h3>Notes</h3><ul>{notes}</ul>" if notes else "") + "</div>")


def _sourced(prov: Provenance, ids: list[int], body: str, has_data: bool) -> str:
    """body with its source underneath; withheld when it shows data that no stored run stands behind."""
    if not ids:
        return f'<p class="src">{html.escape(WITHHELD)}</p>' if has_data else body
    return body + f'<p class="src">Source: {html.escape(prov.cite(ids))}</p>'


def _publishable(tables: dict) -> dict:
    """The tables as a report shows them: rater names (the gold and time-on-task tables') replaced by the export's
    pseudonyms; the pooled row keeps its label."""
    from .export import pseudonyms

    out = dict(tables)
    for name, df in tables.items():
        if "rater" in df.columns and len(df):
            names = [r for r in df["rater"] if r != ALL]
            alias = dict(zip(names, pseudonyms(names)))
            out[name] = df.assign(rater=[alias.get(r, r) for r in df["rater"]])
    return out


def build_report(db, out_dir: Path, agg: Aggregate | None = None) -> Path:
    """Write out_dir/index.html: verdict, provenance, plots and every table. Text from raters is escaped (inert).
    Every figure names the experiments it came from; one with no stored run behind it is not printed."""
    from ..aggregate import aggregate

    agg = agg or aggregate(db)
    prov = build_provenance(db, agg)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figs = figures(agg, db)
    plots = "".join(
        _sourced(prov, prov.for_plot(k),
                 f'<figure><img alt="{html.escape(k)}" src="data:image/png;base64,{_png(f)}"></figure>', True)
        for k, f in figs.items())
    tables = "".join(
        f"<h3>{html.escape(name)}</h3>" + _sourced(
            prov, prov.for_table(name),
            df.to_html(index=False, escape=True, na_rep="n/a", float_format=lambda x: f"{x:.3f}") if len(df) else "<p>no data</p>",
            bool(len(df)))
        for name, df in _publishable(agg.tables).items()
    )
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>evalkit report</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse;font-size:13px;margin-bottom:1em}}td,th{{border:1px solid #ccc;padding:2px 6px}}
img{{max-width:100%}}.verdict,.provenance{{border:1px solid #ccc;padding:0.5em 1em;border-radius:6px;margin-bottom:1em}}
.src{{color:#57606a;font-size:12px}}pre{{background:#f6f8fa;padding:0.5em}}</style></head><body>
<h1>evalkit: does the draft model make writing requests faster without hurting the content?</h1>
<p>Generated {html.escape(prov.generated_at)} from the database. Speed-up source: {html.escape(str(agg.speed.source))}.</p>
{verdict_html(agg, prov)}{provenance_html(prov)}<h2>Plots</h2>{plots}<h2>Tables</h2>{tables}</body></html>"""
    path = out_dir / "index.html"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path
