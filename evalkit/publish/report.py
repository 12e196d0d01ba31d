"""A self-contained HTML report (plots inlined as PNG) and the figures the app's Results tab shows."""

from __future__ import annotations

import base64
import html
import io
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..aggregate import ALL, Aggregate, Decision
from ..errors import cannot_write, check_folder, output_folder
from ..generation import registry
from ..records import GenerationPath
from ..task.criteria import title
from . import one_moment, refuse_to_replace, still_open_words
from .provenance import WITHHELD, Provenance, build_provenance, environment_line, model_line, scope_items


def _figure(figsize: tuple[float, float]):
    """A figure and its axes, drawn by Agg, outside pyplot: the app draws plots for several viewers at once, in
    threads, and pyplot's global list of figures is not thread-safe and keeps each figure until it is closed (a
    Results view that raised before closing its figures kept them for the server's life). These are freed as any
    object is, and no global backend is switched for a program that uses evalkit as a library."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def _yerr(values, lows, highs):
    """matplotlib's yerr for intervals around values: never negative (it refuses the figure, and with it the whole
    report and Results tab, where an end sits a rounding error on the wrong side of its value) and 0 where unknown."""
    import numpy as np

    values, lows, highs = (np.asarray(v, float) for v in (values, lows, highs))
    return np.vstack([np.clip(np.nan_to_num(values - lows), 0, None), np.clip(np.nan_to_num(highs - values), 0, None)])


def _errorbars(ax, axis, labels, values, lows, highs, offset: float = 0.0, **kw):
    """Points with their intervals, each at its label's place on `axis` (all the series' labels) plus `offset`."""
    import numpy as np

    values = np.array([np.nan if v is None else v for v in values], float)
    lo = np.array([np.nan if v is None else v for v in lows], float)
    hi = np.array([np.nan if v is None else v for v in highs], float)
    yerr = _yerr(values, lo, hi)
    ax.errorbar([axis.index(label) + offset for label in labels], values, yerr=yerr, fmt="o", capsize=4, **kw)
    ax.set_xticks(range(len(axis)))
    ax.set_xticklabels(axis, rotation=20, ha="right")


# The outputs of pairs that raters can still rate: one output's length and seconds, plotted by path, would tell a
# rater which side of that pair is which (the reveal is held until a pair closes; so is its point).
_OPEN_PAIR_OUTPUTS = ("AND id NOT IN (SELECT g FROM (SELECT ordinary_generation_id AS g, id AS pair FROM pairs "
                      "UNION ALL SELECT assisted_generation_id, id FROM pairs) "
                      "WHERE pair NOT IN (SELECT pair_id FROM closed_pairs) AND g IS NOT NULL)")


def _no_figure(sp) -> str:
    """The prompts the speed-up plot has no point for, per path ('' when none): no comparable pair (another stop
    reason, or lengths beyond the tolerance), or a ratio that cannot be formed; left out without a word, the plot read
    as if every prompt had been measured (speed audit, 2026-12-06)."""
    if not len(sp):
        return ""
    gone = sp[sp["speedup"].isna() & (sp["prompt_id"] != ALL)]
    parts = [f"{registry.label(path)}: {', '.join(gone[gone['path'] == path]['prompt_id'])}"
             for path in registry.order(gone["path"].unique())]
    return ("; no point (no comparable pair, or a time of 0) for " + "; ".join(parts)) if parts else ""


def figures(agg: Aggregate, db, blind: bool = False) -> dict:
    """name -> matplotlib Figure. Empty data gives a figure that says so, never a crash. blind: for the app's
    Results tab (raters and organisers alike), the per-output plot leaves out the outputs of pairs still open to
    rating."""
    figs = {}

    def finish(name, fig, ax, title, detail):  # every plot: its legend, a small title, laid out, kept under its name
        ax.legend(fontsize=8)
        # the title, then what its bars or points are on a line of their own, wrapped to the figure's width: one
        # long line ran past a narrow figure, and its end (or, under the app's label chip, its start) was lost
        ax.set_title(f"{title}\n{textwrap.fill(detail, 80)}", fontsize=9)
        fig.tight_layout()
        figs[name] = fig

    def empty(title, why="no data yet"):
        fig, ax = _figure((6, 3))
        ax.text(0.5, 0.5, why, ha="center", va="center")
        ax.set_axis_off()
        ax.set_title(title)
        return fig

    sp = agg.tables["speedup"]
    unplotted = _no_figure(sp)
    sp = sp[sp["speedup"].notna()] if len(sp) else sp
    if len(sp):
        fig, ax = _figure((7, 3.5))
        # each path against ordinary on its own, in its registered colour (never pooled with another path's)
        shown, axis = registry.order(sp["path"].unique()), list(dict.fromkeys(sp["prompt_id"]))
        for k, path in enumerate(shown):
            g = sp[sp["path"] == path]
            _errorbars(ax, axis, list(g["prompt_id"]), list(g["speedup"]), list(g["ci_low"]), list(g["ci_high"]),
                       offset=(k - (len(shown) - 1) / 2) * 0.15, color=registry.colour(path),
                       label=f"{registry.label(path)} vs ordinary")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_ylabel("speed-up (x)")
        from ..aggregate.timing import POOL_SOURCE, bench_basis

        # the pool's runs say whether they decide (the gate's speed_source); a benchmark's figure is the deciding one
        runs = bench_basis(agg.speed) if agg.speed.source == POOL_SOURCE else agg.speed.source
        finish("speedup", fig, ax, "Speed-up per prompt", f"error bars: 95% CI; runs: {runs}{unplotted}")
    else:
        # timed runs, but no point: "no data yet" read as if nothing had been measured
        figs["speedup"] = empty("Speed-up per prompt", textwrap.fill(unplotted[2:], 60) if unplotted else "no data yet")

    pr = agg.tables["pass_rates"]
    pr = pr[(pr["prompt_id"] == ALL) & pr["pass_rate"].notna()] if len(pr) else pr
    if len(pr):
        fig, ax = _figure((7, 3.5))
        rated = [s.name for s in registry.all_paths() if s.in_pairs]  # the two sides of the blind pairs
        for k, path in enumerate(rated):
            offset = (k - (len(rated) - 1) / 2) * 0.24
            g = pr[pr["path"] == path]
            x = [i + offset for i in range(len(g))]
            ax.errorbar(x, g["pass_rate"], yerr=_yerr(g["pass_rate"], g["ci_low"], g["ci_high"]),
                        fmt="o", capsize=4, color=registry.colour(path), label=registry.label(path))
            ax.set_xticks(range(len(g)))
            ax.set_xticklabels([title(c, "en") for c in g["criterion"]], rotation=15, ha="right")
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("pass rate")
        finish("pass_rates", fig, ax, "Pass rate per criterion and path",
               "error bars: cluster-aware 95% CI (pairs, raters)")
    else:
        figs["pass_rates"] = empty("Pass rates")

    ag, ka = agg.tables["agreement"], agg.tables["prescreen_agreement"]
    def num(v):
        return 0.0 if v is None or v != v else float(v)  # None / NaN (undefined) drawn as 0

    if len(ag) and (ag["alpha"].notna().any() or ka["kappa"].notna().any()):
        fig, ax = _figure((7, 3.2))
        items = list(ag["item"])
        ax.bar([i - 0.2 for i in range(len(items))], [num(v) for v in ag["alpha"]], width=0.4, label="Krippendorff alpha (raters)")
        kap = ka.set_index("criterion")["kappa"].to_dict()

        ax.bar([i + 0.2 for i in range(len(items))], [num(kap.get(i)) for i in items],
               width=0.4, label="Cohen kappa (pre-screen vs raters)")
        ax.set_xticks(range(len(items)))
        ax.set_xticklabels([title(i, "en") for i in items], rotation=15, ha="right")
        ax.axhline(0, color="grey", lw=0.8)
        finish("agreement", fig, ax, "Agreement", "missing values drawn as 0")
    else:
        figs["agreement"] = empty("Agreement")

    rows = list(db.query(
        "SELECT path, new_tokens, generate_seconds FROM generations WHERE status = 'ok' AND generate_seconds IS NOT NULL "
        "AND live = 0 AND batch_size = 1 " + (_OPEN_PAIR_OUTPUTS if blind else "")))
    # (a batched call's seconds serve all its requests: the batch plot shows them)
    if rows:
        fig, ax = _figure((7, 3.5))
        for path in registry.order({r["path"] for r in rows}):
            rs = [r for r in rows if r["path"] == path]
            ax.scatter([r["new_tokens"] for r in rs], [r["generate_seconds"] for r in rs], s=12, alpha=0.6,
                       color=registry.colour(path), label=registry.label(path))
        ax.set_xlabel("new tokens")
        ax.set_ylabel("generate() seconds")
        finish("seconds_vs_tokens", fig, ax, "Seconds against new tokens",
               "every stored run but the outputs of pairs still open to rating" if blind else "every stored run")
    else:
        figs["seconds_vs_tokens"] = empty("Seconds against new tokens")

    bt = agg.tables["batch"]
    if len(bt) and bt["total_tokens_per_second"].notna().any():
        fig, ax = _figure((7, 3.5))
        o = bt[bt["path"] == GenerationPath.ORDINARY]
        ax.errorbar(o["batch_size"], o["total_tokens_per_second"],
                    yerr=_yerr(o["total_tokens_per_second"], o["total_ci_low"], o["total_ci_high"]),
                    fmt="o-", capsize=4, color=registry.colour(GenerationPath.ORDINARY), label="ordinary at batch size")
        a = bt[bt["path"] == GenerationPath.ASSISTED]
        if len(a):
            a = a.iloc[0]
            assisted = registry.colour(GenerationPath.ASSISTED)
            ax.axhline(a["total_tokens_per_second"], color=assisted, label="assisted at batch 1")
            if a["total_ci_low"] == a["total_ci_low"] and a["total_ci_low"] is not None:
                ax.axhspan(a["total_ci_low"], a["total_ci_high"], color=assisted, alpha=0.2)
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(o["batch_size"]))
        ax.set_xticklabels([str(b) for b in o["batch_size"]])
        ax.set_xlabel("batch size (ordinary path)")
        ax.set_ylabel("total new tokens / s")
        finish("batch", fig, ax, "Total throughput by batch size",
               "error bars and band: 95% CI; assisted runs one request at a time")

    acc = agg.tables["speedup"]
    acc = acc[acc["acceptance_rate"].notna()] if len(acc) else acc
    if len(acc):
        fig, ax = _figure((7, 3))
        prompts = list(dict.fromkeys(acc["prompt_id"]))
        drafting = registry.order(acc["path"].unique())
        width = 0.8 / len(drafting)
        for k, path in enumerate(drafting):  # each path that drafts, on its own bars
            g = acc[acc["path"] == path]
            ax.bar([prompts.index(p) + (k - (len(drafting) - 1) / 2) * width for p in g["prompt_id"]],
                   list(g["acceptance_rate"]), width=width, color=registry.colour(path), label=registry.label(path))
        ax.set_xticks(range(len(prompts)))
        ax.set_xticklabels(prompts, rotation=20, ha="right")
        ax.set_ylim(0, 1)
        ax.set_ylabel("acceptance rate")
        finish("acceptance", fig, ax, "Draft acceptance per prompt", "share of drafted tokens kept")
    else:
        figs["acceptance"] = empty("Draft acceptance per prompt")
    return figs


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return base64.b64encode(buf.getvalue()).decode()


def verdict_html(agg: Aggregate, prov: Provenance | None = None, shared=None) -> str:
    """The verdict and its conditions; with `prov`, each condition names the runs behind it, and one whose
    figure has no stored run behind it is withheld. shared: how the aggregate's words leave the machine (a report is
    shared: scrub.shared_text; without_home when not given)."""
    from .scrub import without_home

    shared = shared or without_home
    v = agg.verdict

    def conditions(verdict, after: bool = False) -> str:
        items = []
        for c in verdict.conditions:
            status = "ok" if c.ok else ("FAIL" if c.ok is False else "unknown")
            reason = html.escape(shared(c.reason))  # a fallback's cause quotes a stored error message
            if prov is not None:
                ids = prov.for_condition(c.name, after)
                if ids:
                    reason += f' <span class="src">[{html.escape(prov.cite(ids))}]</span>'
                elif c.ok is not None:
                    reason = html.escape(WITHHELD)
            items.append(f"<li><b>{html.escape(c.name)}</b>: {status} — {reason}</li>")
        return "<ul>" + "".join(items) + "</ul>"

    color = {Decision.KEEP: "#1a7f37", Decision.DROP: "#cf222e"}.get(v.decision, "#9a6700")
    notes = "".join(f"<li>{html.escape(shared(n))}</li>" for n in agg.notes)  # a report is shared
    label = f" ({html.escape(v.label)})" if v.interim else ""
    claim = (f"<p>{html.escape(v.claim)}</p>" if v.claim else "") + (
        f'<p class="ppi">{html.escape(v.ppi)}</p>' if getattr(v, "ppi", "") else "")
    if same := (agg.identical_line() if hasattr(agg, "identical_line") else ""):
        claim += f'<p class="identical">{html.escape(same)}</p>'
    study = getattr(agg, "study", None)
    head = f'<p class="study">Shown: {html.escape(study.label())}.</p>' if study is not None else ""
    frozen = getattr(agg, "frozen", None)
    if frozen is not None:
        from ..aggregate.verdict import settled_when

        label = f" (frozen {html.escape(frozen.completed_at)}, {settled_when(v.look)})"
    after = getattr(agg, "after", None)
    later = (f'<div class="after"><h3>After the decision (not the decision): {html.escape(after.decision)}</h3>'
             f"<p>The same analysis on the data as it is now, with the ratings, corrections and gold answers stored "
             f"since the decision; it never changes the decision above.</p>{conditions(after, True)}</div>"
             if after is not None else "")
    return (f'<div class="verdict">{head}<h2 style="color:{color}">Verdict: {html.escape(v.decision)}{label}</h2>'
            f'{claim}{conditions(v)}{later}' + (f"<p>Notes:</p><ul>{notes}</ul>" if notes else "") + "</div>")


def provenance_html(prov: Provenance, db, salt_db=None) -> str:
    """The provenance block: figures with their runs, experiments, environment, scope (raters as the export names
    them: by the salt of `salt_db`, else of `db`), prompts, gate."""
    from .scrub import shared_text, without_home
    e, shared = html.escape, shared_text(db)
    figs = "".join(
        f"<li><b>{e(f.name)}</b>: " + (f"{e(shared(f.value))} <span class=\"src\">[{e(prov.cite(f.experiments))}]</span>"
                                       if f.value is not None else e(shared(f.note or WITHHELD))) + "</li>"
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
    from .scrub import pseudonyms

    scope = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>"
                    for k, v in scope_items(prov.scope, lambda names: pseudonyms(names, salt_db or db)))
    prompts = "".join(
        f"<tr><td>{e(p.id)}</td><td><code>{e(', '.join(p.hashes) or 'not recorded')}</code></td><td>{e(p.source)}</td>"
        f"<td>{e(p.material)}</td><td>{e(p.task)}</td><td>{'' if p.max_new_tokens is None else p.max_new_tokens}</td></tr>"
        for p in prov.prompts)
    if prov.gate:
        g = prov.gate
        gate = (f"<p>Frozen with experiment {g['experiment_id']} ({e(without_home(g['path']))}), hash <code>{e(g['hash'])}</code>"
                f"{'' if g['hash_ok'] else ' <b>does not match its text</b>'}.</p><pre>{e(g['text'])}</pre>")
    else:
        gate = "<p>No experiment with a frozen release gate.</p>"
    notes = "".join(f"<li>{e(shared(n))}</li>" for n in prov.notes)  # a report is shared: no user's name, no machine's
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


def _publishable(tables: dict, db) -> dict:
    """The tables as a report shows them: rater names (the gold and time-on-task tables') replaced by the export's
    pseudonyms; the pooled row keeps its label."""
    from ..task.criteria import titled
    from .scrub import pseudonyms

    out = {name: titled(df) for name, df in tables.items()}  # criteria by title, never by id
    for name, df in tables.items():
        if "rater" in df.columns and len(df):
            names = [r for r in df["rater"] if r != ALL]
            alias = dict(zip(names, pseudonyms(names, db)))
            out[name] = out[name].assign(rater=[alias.get(r, r) for r in df["rater"]])
    return out


@dataclass
class Written:
    path: Path  # the report's index.html
    still_open: int  # pairs of the study being rated still open to raters as it was written (its banner says so)


def write_report(db, out_dir, study: str | None = None) -> Written:
    """`evalkit report`: the aggregate of one study (the latest unless named) written as index.html in out_dir."""
    from ..aggregate import aggregate
    from ..progress import Steps
    from ..rating.queue import unclosed_pairs

    # refused before the aggregate, whose look may freeze the decision: a refusal leaves the database as it was
    refuse_to_replace(Path(out_dir) / "index.html", TITLE_MARK, "a report")
    check_folder(out_dir, "the report")
    # the look, provenance, plots and tables all read from one copy (publish.one_moment), so that a rating stored
    # meanwhile is in none of them; the pseudonyms' salt is the database's own (one made in the copy would be lost)
    shown = Steps("report", 2)
    shown.step("the study's look")
    with one_moment(db, lambda view: aggregate(view, study=study), "the report") as (view, agg):
        # counted once, after the look (a decision it froze closed its study's pairs): the banner and the command's
        # warning say the same number (study pairs: gold pairs have no sides)
        still_open = unclosed_pairs(view, gold=False)
        shown.step("plots and tables")
        written = Written(build_report(view, out_dir, agg, still_open, salt_db=db), still_open)
    shown.close()
    return written


def _open_banner(still_open: int) -> str:
    """A warning at the top of a report written while pairs are still open to raters ('' when none are)."""
    if not still_open:
        return ""
    return ('<p class="open" style="border:2px solid #cf222e;padding:0.5em"><b>Written while rating was under way:</b> '
            f"{html.escape(still_open_words(still_open, 'this report'))}.</p>")


# The page's title, which says evalkit wrote it (a report refuses to replace an index.html without it).
TITLE_MARK = "<title>evalkit report</title>"


def build_report(db, out_dir: Path, agg: Aggregate | None = None, still_open: int | None = None,
                 salt_db=None) -> Path:
    """Write out_dir/index.html: verdict, provenance, plots and every table. Text from raters is escaped (inert).
    Every figure names the experiments it came from; one with no stored run behind it is not printed. still_open: the
    pairs still open to raters, when the caller counted them (else counted here). salt_db: the database whose salt
    names raters, when `db` is a copy of it."""
    from ..aggregate import aggregate
    from ..aggregate.timing import bench_basis
    from ..rating.queue import unclosed_pairs
    from .scrub import shared_text

    refuse_to_replace(Path(out_dir) / "index.html", TITLE_MARK, "a report")
    agg = agg or aggregate(db)
    prov = build_provenance(db, agg)
    out_dir = output_folder(out_dir, "the report")
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
        for name, df in _publishable(agg.tables, salt_db or db).items()
    )
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">{TITLE_MARK}
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse;font-size:13px;margin-bottom:1em}}td,th{{border:1px solid #ccc;padding:2px 6px}}
img{{max-width:100%}}.verdict,.provenance{{border:1px solid #ccc;padding:0.5em 1em;border-radius:6px;margin-bottom:1em}}
.src{{color:#57606a;font-size:12px}}pre{{background:#f6f8fa;padding:0.5em}}</style></head><body>
<h1>evalkit: does the draft model make writing requests faster without hurting the content?</h1>
<p>Generated {html.escape(prov.generated_at)} from the database. Speed-up source: {html.escape(bench_basis(agg.speed))}.</p>
{_open_banner(unclosed_pairs(db, gold=False) if still_open is None else still_open)}{verdict_html(agg, prov, shared_text(db))}{provenance_html(prov, db, salt_db)}<h2>Plots</h2>{plots}<h2>Tables</h2>{tables}</body></html>"""
    path = out_dir / "index.html"
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        raise cannot_write(path, "the report", e) from e
    return path
