"""The notes printed beside a verdict (Aggregate.notes), each written from one template of NOTES with its figures.

A Note is the note's English (a str: the report, the JSON and the Results tab read it as before) that keeps the key
and the figures it was written from, so that ui.verdictzh.NOTES_ZH writes the same note in Chinese with the same
figures, as the pre-screen's reasons are (aggregate.ppi.WHY). A figure that is itself a Note is a part that varies
(said in either language): the sentences other modules make for a note (study.studies.FILL, generation.speed's
SPEED_NOTES, generation.fallbacks.CAUSE) are written by the `make` the aggregate passes, note, so they are Notes too.
A figure named `*_en` is plain English text, as a decision frozen by an older evalkit stored it, which the Chinese
quotes as the English original and says so.
"""

from __future__ import annotations

from ..generation.fallbacks import CAUSE
from ..generation.speed import SPEED_NOTES
from ..study.studies import FILL

NOTES = {
    # the study shown
    "study shown": "this is {study}; `--study NAME` shows another ({others})",
    # interim looks
    "interim looks": ("INTERIM LOOK, NOT A DECISION: no look of the gate has settled the study yet; a later look may "
                      "({plan}), and the app stops serving pairs when one does; stopping anywhere else, because it "
                      "looks good, is what the plan forbids"),
    "interim fixed": ("INTERIM LOOK, NOT A DECISION: the verdict stays INSUFFICIENT DATA (or DROP on speed or memory) "
                      "until the planned number of pairs is rated; stopping early because it looks good is what the "
                      "plan forbids"),
    "plan fixed": "fixed design: one look at {planned} decided pairs",
    "plan looks": ("{kind}: up to {looks} looks, one each {every} ratings or so (decided pairs {sizes}), {spend}"),
    "spend alpha": "O'Brien-Fleming-type Lan-DeMets alpha spending",
    "spend betting": "an anytime-valid betting confidence sequence",
    "untakeable": ("{stuck} pair(s) the next look ({target} decided pairs) needs can be served to none of the study's "
                   "{raters} current rater(s): each has rated or skipped it, met one of its texts, kept its hold to "
                   "the cap, so the study waits for them and will not complete as it stands. Invite a rater who can "
                   "judge them (`evalkit raters add NAME`; open sign-up lets one in too), or give them up (`evalkit "
                   "pairs give-up --untakeable --reason TEXT`: each then counts at the worst, -1 for the lower end and "
                   "+1 for the upper, and the look goes on). The decision never leaves a pair out for what it shows: "
                   "that would judge the outputs raters chose"),
    "untakeable share": ("{stuck} pair(s) the next look ({target} decided pairs) needs can be served to none of the "
                         "study's {raters} current rater(s): each has rated or skipped it, met one of its texts, kept "
                         "its hold to the cap, or given her share (app.max_ratings_per_rater = {share}), so the study "
                         "waits for them and will not complete as it stands. Invite a rater who can judge them "
                         "(`evalkit raters add NAME`; open sign-up lets one in too), or raise "
                         "app.max_ratings_per_rater, or give them up (`evalkit pairs give-up --untakeable --reason "
                         "TEXT`: each then counts at the worst, -1 for the lower end and +1 for the upper, and the look "
                         "goes on). The decision never leaves a pair out for what it shows: that would judge the "
                         "outputs raters chose"),
    "waiting": ("{waiting} pair(s) early in the queue's random order are not rated yet{why}, so the {held} rated "
                "pair(s) after them do not count towards the next look ({target} decided pairs) until they are. The "
                "decision takes the first pairs of that order, every one of them: leaving out the pairs raters skip "
                "or take longest over would judge the outputs raters chose, not the pool's"),
    "waiting skipped": (" ({skipped} of them skipped, {skips} skips in all: a rater who can judge them, invited with "
                        "`evalkit raters add`, is served them first)"),
    "waiting held": " (on a rater's screen, or not reached yet)",
    # which study, where the others stand, and the pool's size (study.studies.FILL: a pool's sentence opens a note)
    **{key: text[0].upper() + text[1:] if key.startswith("pool ") else text for key, text in FILL.items()},
    # before a benchmark
    "conditions not judged": "speed and memory conditions not judged: {reason}",
    "device unknown": ("the study's first pool (experiment {pool}) {seen}, and its gate's speed_device = \"pool\" takes "
                       "the device the speed claim is about from it, so no benchmark can be known to run on the "
                       "deployment's hardware and none is guessed; a study's gate is frozen at its first pool, so set "
                       "speed_device = \"cpu\", \"cuda\" or \"mps\" in configs/gate.toml before it, and for this study "
                       "start another under that gate (`evalkit generate --until-planned --new-study NAME`, or a new "
                       "`--db`) and benchmark it there"),
    "device unrecorded": "recorded no device (an older evalkit's pool)",
    "device layouts": "ran on several device placements ({layouts})",
    # why a benchmark measured no memory (timing._memory_note: "assisted path never ran" is timing.NEVER_RAN)
    "memory never ran": ("not measured: benchmark {bench}'s assisted path never ran (all {runs} of its assisted runs "
                         "fell back{cause})"),
    "memory cause": "; {cause}",
    "memory no cause": "",
    "memory no readings": "not measured: benchmark {bench} holds no timed run with a memory reading on both paths",
    "memory whys": "{one}; {rest}",
    "memory unmeasured": ("extra memory of the draft {why}: fix the cause and run `evalkit bench` again before the "
                          "planned sample completes, since the decision then freezes the speed-up and memory as "
                          "measured by that time"),
    "no benchmark": ("no benchmark yet: run `evalkit bench`{where} before the planned sample completes, since the "
                     "decision then freezes the speed-up and memory as measured by that time"),
    "no benchmark left out": ("no benchmark of what the study rates yet (one was left out, see below): run `evalkit "
                              "bench`{where} before the planned sample completes, since the decision then freezes the "
                              "speed-up and memory as measured by that time"),
    "on device": " on {device}",
    # beside a frozen decision
    "decision frozen": ("DECISION FROZEN {when} (rating {rating}, {completed}; stored {stored}, gate {gate}): {ratings} "
                        "ratings of {pairs} pairs, {left_out} rater(s) left out by the gold check; {later} rating "
                        "row(s) stored after it (ratings, corrections, skips) and {later_pairs} later complete pair(s) "
                        "are in the tables and the look after the decision only"),
    "frozen at look": "at look {index} of at most {of} ({pairs} decided pairs), which settled it",
    "frozen complete": "when the planned sample completed",
    "rating stopped": ("rating stopped at the decision: the study's pairs are closed, {unrated} pooled pair(s) whose "
                       "outputs differ were never rated, and the app tells raters no more ratings are needed"),
    "not measured": ("{what} not measured when the planned sample completed: the decision keeps that for good; the "
                     "look after the decision shows what a later benchmark measured"),
    "speed-up": "speed-up",
    "memory": "memory",
    "speed-up and memory": "speed-up and memory",
    "gold moved": ("after the decision the gold check would leave out {now} rater(s) instead of {then}: the decision "
                   "keeps the set frozen at completion (the tables too)"),
    "figures weighed": ("the speed and memory figures shown are those the decision weighed; measured since (the look "
                        "after the decision, and the timing tables): {line}{memory}"),
    "figures weighed no speed-up": ("the speed and memory figures shown are those the decision weighed; measured since "
                                    "(the look after the decision, and the timing tables): no speed-up{memory}"),
    "memory since": ", the draft adds {mb:.0f} MB",
    # the speed line (aggregate.speed_line: the SPEED line, and what a frozen decision's note says was measured since)
    "line": ("speed-up over {comparable} comparable pairs {speedup}{rest}; tokens per second, assisted over ordinary, "
             "over all {matched} matched pairs (no selection on length or stop reason{without}) {tps}{gap}{theory}"
             "{counts}"),
    "line empty": "",
    "line fig none": "not measured",
    "line fig": "{ratio}x [{low}, {high}]{flat}",
    "line fig no interval": "{ratio}x (no interval)",
    "line flat": " (zero width: the timings carry no spread, no certainty)",
    "line rest": " ({words})",
    "line gap": "; the 95% intervals do not overlap",
    "line theory": "; Leviathan et al. predict {theory}x from the measured acceptance, draft length and cost ratio",
    "line counts": "; the two acceptance counts (candidate generator, target passes) disagree on some assisted runs",
    "excluding one": ", excluding the {n} assisted run that fell back",
    "excluding many": ", excluding the {n} assisted runs that fell back",
    "left out": "{parts} left out{after}",
    "left out parts": "{one} and {rest}",
    "left out not comparable": ("{n} of {matched} matched pairs not comparable (another stop reason, or lengths beyond "
                                "the tolerance)"),
    "left out fell one": "{fell} assisted run that fell back",
    "left out fell many": "{fell} assisted runs that fell back",
    "left out deployed": "; as deployed, each fallback counted at its whole wait: {ratio}x{ci}",
    "left out deployed ci": " (95% CI {low} to {high})",
    "left out overstates": ", so it overstates what the assisted configuration delivers",
    # the gold check
    "gold frozen": ("gold check at the decision (min_gold_accuracy {min_gold:.2f}): no rater left out; the gold table "
                    "shows each rater's accuracy now"),
    "gold not applied": "gold check (min_gold_accuracy {min_gold:.2f}) not applied: no rater has rated a gold pair",
    "gold left out": ("gold check: {left_out} of {checked} checked rater(s) below the pre-registered accuracy "
                      "{min_gold:.2f} are left out, with their {ratings} rating(s) of study pairs, of every table and "
                      "the verdict (the ratings stay stored, and an export carries them)"),
    "gold all": "gold check: all {checked} checked rater(s) at or above the pre-registered accuracy {min_gold:.2f}",
    "gold unchecked": "gold check: {unchecked} rater(s) met no gold pair and could not be checked; they are kept",
    # the gate file
    "no gate": ("no experiment with a frozen release gate: `evalkit generate` makes the pair pool and freezes the gate "
                "file with it; then the raters rate in the app (`evalkit serve`)"),
    "gate legacy": ("the gate was frozen by an evalkit that did not know `{key}`: it keeps the meaning it had then "
                    "({key} = {value}{meaning})"),
    "legacy speed_rounds": ": every benchmark round stored by the decision pooled, however many reruns",
    "legacy speed_source": (": the pair pool's single runs decide the speed condition until a benchmark of the study's "
                            "pair is stored, whose rounds then replace them"),
    "legacy speed_device": ": a benchmark of the study's pair on any device decides, whatever the pool ran on",
    "legacy other": "",
    "gate changed": ("gate file {path} changed after experiment {experiment} started{where} (frozen {frozen}, now "
                     "{now}): the frozen version is used"),
    "gate gone": "gate file {path} is gone; the version frozen with experiment {experiment}{where} is used",
    "gate study": " ({study})",
    "gate no study": "",
    # the raters
    "roster as planned": "roster: {spread}; the plan's power assumed {planned} (gate planned_raters): as planned",
    "roster decided": ("roster: {spread}; the plan's power assumed {planned} sharing the ratings evenly (gate "
                       "planned_raters)"),
    "roster short": ("roster: {spread}; the plan's power assumed {planned} sharing the ratings evenly (gate "
                     "planned_raters). With fewer, or the same spread unevenly, the verdict's error rate holds but its "
                     "power falls: invite more raters, and keep the share even with app.max_ratings_per_rater"),
    "raters spread": ("{rated} raters have rated, their ratings spread as evenly as {even:.1f} raters sharing them (the "
                      "interval's raters' part has about {dof:.0f} degrees of freedom)"),
    "one rater": "1 rater has rated",
    "raters differ": ("raters differ widely about one path: the ratings put the sd over raters of a rater's own "
                      "assisted - ordinary pass rate at {mean:.1f} points on average over the criteria ({each}), "
                      "beyond chance (F = {f:.2f}, permutation p = {p:.3f}). From {limit:.1f} (a rater x path sd of "
                      "{logit} on the logit scale in the scenario measured) the interval for raters in general was "
                      "measured to pass a criterion that truly drops by the margin in more than the one-sided 2.5% of "
                      "studies (README, 'Where raters disagree widely about one path'). A KEEP here is weaker than its "
                      "stated error rate: more raters narrow the gap (measured at a logit sd of 1.5: 5.7% with 10 "
                      "raters, 2.7% with 40), or state the claim about these raters only (gate claim)"),
    "passed over": ("{passed} of the {head} rated pairs the verdict rests on were passed over by a rater (skipped, or "
                    "held and let go) before another rated them: the sample is still the head of the queue's random "
                    "order, but the interval takes a pair's rater as not chosen by what the pair shows, and a rater "
                    "who passes a pair over chooses; where raters judge the paths differently, those pairs carry the "
                    "judgement of whoever rates what others avoid (the decision is unchanged)"),
    "time on task": ("{fast} of {timed} timed ratings took under {floor:g} s (app.min_seconds_on_task), from {raters} "
                     "rater(s): see the time_on_task table"),
    # the speed figure: its own notes (generation.speed.SPEED_NOTES), and the cause of fallbacks (fallbacks.CAUSE)
    **SPEED_NOTES,
    **CAUSE,
    "speed figure": "speed figure: {text}",
    "speed figure quoted": "speed figure: {text_en}",
    "bench other device": ("benchmark {bench} left out, not deciding: {elsewhere}: its figures describe {which} "
                           "hardware, reported, never deciding; {run}"),
    "other hardware": "other",
    "unknown hardware": "unknown",
    "bench mismatch": "benchmark {bench} left out: it does not measure what the study rates ({why})",
    "order imbalance": ("{rounds} deciding benchmark round(s): the paths start in the given order in {given} and "
                        "reversed in {reversed} (ABBA balances them over pairs of rounds), so a drift in the machine's "
                        "speed over the rounds can favour one path; an even speed_rounds with no failed worker keeps "
                        "them balanced"),
    "workers failed": ("{failed} of benchmark {bench}'s {total} worker processes failed (their errors are in "
                       "bench_processes): its figures rest on the others' runs only, not the whole protocol; run "
                       "`evalkit bench` again"),
    "fell back": "{runs} assisted run(s) fell back; they are not counted as assisted",
    "fell back why": "{runs} assisted run(s) fell back; they are not counted as assisted; {cause}",
    "fell back why quoted": "{runs} assisted run(s) fell back; they are not counted as assisted; {cause_en}",
    "pool speed reported": ("speed-up shown from the pair pool's single runs, reported, not deciding: the gate decides "
                            "on `evalkit bench`'s rounds only (speed_source); run it"),
    "pool speed": "speed-up taken from the pair pool's single runs: run `evalkit bench` for the protocol's numbers",
    "figures disagree": ("SPEED FIGURES DISAGREE: the speed-up over comparable pairs and the ratio of tokens per second "
                         "over all matched pairs (no selection on the assisted output's length or stop reason) have 95% "
                         "intervals that do not overlap, so the choice of comparable pairs moves the figure more than "
                         "chance allows; read both (the speedup table: speedup and tps_ratio)"),
    "batch sizes": "batch sizes (benchmark {bench}): {answer}",
    "batch other device": "batch sizes of benchmark {bench} left out: {elsewhere}; {run} `--batch-sizes`",
    "batch mismatch": "batch sizes of benchmark {bench} left out: it does not measure what the study rates ({why})",
    # why a benchmark does not measure what the study rates (data.bench_mismatch, settings_mismatch, request_mismatch,
    # _other_prompts), or ran on other hardware (data.other_device), and where to run one (data.run_on)
    "setting differs": "{setting} = {bench} where the study's pool has {pool}",
    "other weights": "other {role} weights (digest {bench} where the study's pool has {pool})",
    "other tokenizer": "other {role} tokenizer ({key} {bench} where the study's pool has {pool})",
    "prompt edited": "prompt {prompt} is another {what} (hash {have}) than {them} answered (hash {rated}): its file was "
                     "edited in between",
    "what request": "request",
    "them study pairs": "the study's pairs",
    "not timed": "it did not time prompt(s) {prompts}, which the study rates",
    "other prompts": ("it timed other prompts than benchmark {first}, the first of the study's pair ({differs}): the "
                      "speed-up is a median over prompts, so its rounds measure another figure; time the same prompts "
                      "(`evalkit bench --prompt`, bench.prompts)"),
    "prompts also": "also {prompts}",
    "prompts not": "not {prompts}",
    "prompt sets": "{one}; {rest}",
    "bench no device": ("it recorded no device (no worker placement, timed run's device nor compatibility record's), so "
                        "it cannot be known to run on {device}, which the study's speed claim is about (the gate's "
                        "speed_device = \"{speed_device}\")"),
    "bench device": ("its device is {kinds}, and the study's speed claim is about {device} ({whose}: the gate's "
                     "speed_device = \"{speed_device}\"{split})"),
    "bench device pool": "the kind its first pool ran on",
    "bench device gate": "named by the gate",
    "bench device split": ("; kinds joined by + are a run whose target's or draft's weights sat on several (a "
                           "device_map's offload, models.draft_device), other hardware than either alone"),
    "bench device one": "",
    "run on placed": ("benchmark with the weights placed over {device}, as the study's speed claim is (models.device, "
                      "models.device_map, models.max_memory and models.draft_device as in the pool's config, or the "
                      "deployment's)"),
    "run on": "benchmark on {device} (models.device = \"{device}\")",
}


class Note(str):
    """A note's English, with the key of its template in NOTES and the figures it was written from."""

    key: str
    figures: dict

    def __new__(cls, key: str, /, **figures):
        self = super().__new__(cls, NOTES[key].format(**figures))
        self.key, self.figures = key, figures
        return self

    def __reduce__(self):  # a copy or a pickle keeps the key and figures
        return _rebuild, (self.key, self.figures)


def _rebuild(key: str, figures: dict) -> Note:
    return Note(key, **figures)


def note(key: str, /, **figures) -> Note:
    """The note NOTES[key] with these figures (a figure may be a Note: a part that varies)."""
    return Note(key, **figures)


def keyed(x):
    """A Note as JSON (its key and figures, a part that varies as its own), to be stored and read back by unkeyed;
    any other value as it is."""
    if isinstance(x, Note):
        return {"key": x.key, "figures": {k: keyed(v) for k, v in x.figures.items()}}
    return x


def unkeyed(x, english):
    """What keyed stored, as the Note again, where it still writes `english` (the text stored beside it); else the
    stored English as it is, plain text (a decision frozen by an older evalkit, which stored no key: quoted)."""
    def rebuilt(v):
        if isinstance(v, dict) and set(v) == {"key", "figures"}:
            return Note(v["key"], **{k: rebuilt(f) for k, f in v["figures"].items()})
        return v

    try:
        n = rebuilt(x)
    except (KeyError, IndexError, ValueError, TypeError):  # a key this evalkit no longer has: the English stands
        return english
    return n if isinstance(n, Note) and n == english else english


def plan(values: dict) -> Note:
    """study.monitoring.describe as a Note (the interim note's plan, said in either language)."""
    from ..study.monitoring import FIXED, GROUP_SEQUENTIAL, look_sizes

    sizes = look_sizes(values)
    kind = values.get("monitoring", FIXED)
    if kind == FIXED or not sizes:
        return note("plan fixed", planned=values.get("planned_pairs", 0))
    shown = ", ".join(map(str, sizes)) if len(sizes) <= 5 else f"{sizes[0]}, {sizes[1]}, …, {sizes[-2]}, {sizes[-1]}"
    return note("plan looks", kind=kind, looks=len(sizes), every=values.get("look_every", 50), sizes=shown,
                spend=note("spend alpha" if kind == GROUP_SEQUENTIAL else "spend betting"))
