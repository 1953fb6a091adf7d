"""Generate the documentation page "The explorer" (explorer.md) and the explorer page it embeds.

The embedded page (``explorer/apple.html``) is written here by :mod:`attnsym.explorer` while the
docs are built: the derivations, the toy spec's routing and, when the packaged model is
installed, the sources' apple example on all-MiniLM-L6-v2. The screenshots under ``images/``
are written by ``python -m attnsym.explorer.headless docs/images`` (headless Chromium).
"""

from __future__ import annotations

import mkdocs_gen_files

from attnsym.explorer import page_data, render_page
from attnsym.explorer.real import model_routing
from attnsym.models.evidence import APPLE, packaged_model

model = packaged_model()
inputs, contrasts = [], []
if model is not None:
    text1, text2, word = APPLE
    inputs, contrasts = model_routing(model, [text1, text2], word=word)
data = page_data(evidence=(), inputs=inputs, contrasts=contrasts, title="attnsym explorer: the apple example")
page = render_page(data)
with mkdocs_gen_files.open("explorer/apple.html", "w") as handle:
    handle.write(page)

real = (f"the sources' example on **{model.name}** — “apple” in *{APPLE[0]}* and in *{APPLE[1]}* — and "
        if model is not None else "")

TEXT = f"""# The explorer

`attnsym explore` and `attnsym tour` write **one HTML file** that opens from disk with no
network, no server and nothing fetched: KaTeX (its script, stylesheet and fonts), the page's
script and style, the figures and the data are all inside, and a Content-Security-Policy
forbids the page any request. It shows

* **Derivations**, typeset: the forward pass and its gradients step by step, the elementwise
  $y_i = \\sum_j \\alpha_{{ij}}(x)\\, v_j$ beside the MLP's $y = W x$, each equation's LaTeX
  source one click away and the whole derivation as a `.tex` download;
* **Claims**: the verdict table; each claim opens to its statement, conditions, equations,
  evidence and figures;
* **Routing, live**: choose the input, the layer and the head (or the mean / max over heads);
  the attention heatmap and the routing graph side by side with the fixed graph of the MLP
  (for a real model: the feed-forward block's token graph, each token reads only itself);
  hover or click a token for its row (where it reads from) and its column (who reads it) with
  the weights; rollout and flow as views; the contrast of one word between two sentences with
  its distance per layer and head (click a cell to show that head);
* **Export**: every view as SVG (vector, for papers), its numbers as JSON or CSV.

It is readable on a laptop and at a phone's width, and usable from the keyboard: tab to a token,
move with the arrow keys, Enter pins it. Every number on the page was computed by the Python
API (`attnsym.numeric`, `attnsym.graphs`, `attnsym.models`, `attnsym.claims`) and serialised
once (`attnsym.explorer.PageData`); the page's script only displays it.

## From the command line

```console
$ attnsym explore "I ate an apple for lunch" "I bought an Apple phone today" --word apple -o apple.html
$ attnsym explore --model path/to/hf-folder "Hello world" "Hello there" -o page.html --no-claims
$ attnsym tour            # attnsym-tour/index.html: the explorer page with the tour's results and figures
```

A page built from your sentences shows only them (the toy spec's random inputs only with
`--toy`, labelled "toy: random vectors, words are labels"). A decoder's page (for example
`--model SmolLM2-135M-Instruct`) also says what the model predicts after each sentence and where
that prediction read from, and adds the induction probe (random tokens repeated twice) with its
induction heads labelled. A long text is bounded: an input too large to store whole keeps each
row's top 8 weights (the page says so, and a warning gives its size; a 400-word sentence gives a
page of about 6 MB), and a page above `--max-page-mb` (200) is refused.

## From Python

```python
import attnsym as at
from attnsym.explorer import page_data, write_page
from attnsym.explorer.real import model_routing

m = at.models.load()
inputs, contrasts = model_routing(m, ["I ate an apple for lunch", "I bought an Apple phone today"], word="apple")
write_page(page_data(inputs=inputs, contrasts=contrasts, quick=True), "apple.html")
```

In Jupyter, route results, contrasts and claims' Evidence display themselves with the page's
heatmap (`_repr_html_`).

## The page, embedded

Below: {real}the toy spec (two random inputs through the same random weights), as
`attnsym.explorer` wrote it while these docs were built
([open it alone](explorer/apple.html)).

<!-- the page is served as explorer/index.html, so the frame's address is relative to explorer/ -->
<iframe src="apple.html" title="attnsym explorer" style="width:100%;height:900px;border:1px solid #ddd"></iframe>

## Screenshots

The page opens on the story: an MLP mixes with fixed weights (one graph for every input),
attention computes its weights from the input; the word's graph in the MLP beside its graph in
each sentence; one headline naming the head and what the word reads in each sentence (a sink is
called a sink); the source of the data; one line on √d; and what was validated.

![First screen](images/explorer-first-screen.png)

All heads at once, each thumbnail named by every pattern it follows (`attnsym.heads`: a primary
class and the further labels), drawn on the page's one absolute scale; click one to open it.

![All-heads overview](images/explorer-overview.png)

The head view: the attending token on the left, the key it reads on the right, one colour-blind-safe
colour per head, its own sentence and layer selectors; it opens on the headline's head, and hovering
(or tapping) a token shows only its lines.

![Head view](images/explorer-headview.png)

Routing: heatmap, routing graph and the feed-forward block's fixed graph; a token's row and column.

![Routing view](images/explorer-routing.png)

The same word in two sentences, unfolded: distance per layer and head, and both rows.

![Contrast view](images/explorer-contrast.png)

Claims with their evidence, and the derivations typeset.

![Claims view](images/explorer-claims.png)

![Derivations view](images/explorer-derivations.png)

At a phone's width (390 × 844): the first screen, the picture (it scrolls sideways inside its
frame), the head view and the overview (in a frame that scrolls):

![Phone width](images/explorer-phone.png)

![Phone: the picture](images/explorer-phone-picture.png)

![Phone: head view](images/explorer-phone-headview.png)

![Phone: all heads](images/explorer-phone-overview.png)

## Tested in a real browser

`tests/test_explorer_browser.py` and `tests/test_explorer_models.py` drive the page in headless
Chromium (Debian's `chromium` and `chromedriver`, through selenium; skipped where they are
missing) with the network blocked and every request recorded, and assert: no request leaves
the file; no console error; no raw `\\frac` in the visible text and no KaTeX error; choosing
another head changes the heatmap to that head's numbers; hovering a token shows its row and
column equal to the Python result at the printed precision (toy spec and all-MiniLM-L6-v2);
the drawn routing graph is `attnsym.graphs.routing_graph`; the SVG export is valid SVG; the
JSON and CSV exports hold the numbers shown; rollout and flow show
`attention_rollout`/`attention_flow`; no horizontal scrolling at a phone's width; the first
screen's story lines, headline and results strip at 1440 × 900 and 390 × 844; no toy contrast on
a page built from the user's sentences; each view's source label; hovering a token in the head
view shows only its lines; no raw markup (backticks, `**`, `_{{`, `sqrt(`) in any visible text;
no visible text under 11 px at 390 px; no SVG caption or note running past its drawing (they wrap);
a toy page's headline never silently on a sink head. `tests/test_tour.py` opens the tour's page:
its results (what was validated, to what precision, the claims as expected, the MLP graph
identical) on the first screen, every figure of the tour shown with its caption, the files folded.
"""

with mkdocs_gen_files.open("explorer.md", "w") as handle:
    handle.write(TEXT)
