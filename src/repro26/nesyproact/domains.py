"""Six small web domains mirroring WebArena's (shop, shop_admin, forum, code, map, wiki): task
templates filled from a seeded ``numpy.random.Generator``.

A template returns the intent, a chain of pages (each with the plan steps taken on it; a page's
last step navigates to the next page), the expected records and the expected answer.
:func:`build_task` turns the chain into a :class:`~repro26.nesyproact.env.Site` (distractor
links to decoy pages, no-op buttons and, at rate ``ambiguous``, a sidebar element with the
target's label and a harmful effect) and the environment's plan of
:class:`~repro26.nesyproact.env.Subgoal`; :func:`compose_plan` is the same procedure recalled
from an intent as a model read it (what an agent composes its subgoals from).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping

import numpy as np

from repro26.nesyproact.env import Element, Page, Site, Subgoal, Task

DOMAINS = ("shop", "shop_admin", "forum", "code", "map", "wiki")

# ----------------------------------------------------------------------------- plan steps


def nav(role: str, label: str, query: str = "") -> tuple:
    """Navigate by the element ``(role, label)``; with ``query``, a search result: the element
    is on the page only when the search field ``query`` held ``label`` (a wrong or empty query
    does not reach it)."""
    return ("nav", role, label, query)


def fill(label: str, value: str, field: str) -> tuple:
    return ("fill", "textbox", label, value, field)


def commit(label: str, kind: str, record: dict) -> tuple:
    return ("commit", "button", label, kind, tuple(sorted(record.items())))


def answer(label: str, value: str) -> tuple:
    return ("answer", "text", label, value)


# ----------------------------------------------------------------------------- vocabularies

V = {
    "category": ["Kitchen", "Garden", "Office", "Toys", "Audio"],
    "item": ["Blue Mug", "Red Kettle", "Oak Desk", "Desk Lamp", "Garden Hose", "Toy Robot",
             "Headphones", "Pepper Mill", "Notebook Set", "Camp Chair"],
    "price": ["$12.00", "$24.50", "$7.99", "$89.00", "$15.25", "$42.10"],
    "qty": ["1", "2", "3", "4", "5"],
    "order": ["#1021", "#1047", "#1103", "#1188", "#1204", "#1299"],
    "month": ["January", "February", "March", "April", "May", "June"],
    "count": ["17", "23", "31", "44", "52", "68"],
    "forum": ["books", "gaming", "science", "movies", "cooking"],
    "title": ["Weekly thread", "Need advice", "Show and tell", "Best of the year",
              "Question about setup"],
    "body": ["Thanks in advance", "Details below", "Any ideas welcome", "See the link"],
    "user": ["alice", "bob", "carol", "dave", "erin"],
    "repo": ["atlas", "beacon", "cobalt", "delta-ui", "ember"],
    "place": ["Central Station", "City Museum", "Harbor Park", "Old Library", "North Market"],
    "address": ["1 Main St", "22 Elm Rd", "5 Quay Ave", "9 Hill Ln", "40 Oak Blvd"],
    "article": ["Marie Curie", "Ada Lovelace", "Alan Turing", "Rosalind Franklin",
                "Grace Hopper"],
    "year": ["1867", "1815", "1912", "1920", "1906"],
    "summary": ["Fix typo", "Add source", "Clarify intro", "Update dates"],
}

DISTRACTORS = {
    "shop": ["Deals", "Help", "Account", "Gift Cards"],
    "shop_admin": ["Customers", "Marketing", "Settings", "Help"],
    "forum": ["Wiki", "Moderators", "Search tips", "Rules"],
    "code": ["Snippets", "Groups", "Explore", "Help"],
    "map": ["Layers", "About", "Share", "History"],
    "wiki": ["Random article", "Talk", "Recent changes", "Donate"],
}


class Draw:
    """Where a template's values come from. Generating a task (``rng`` given): each value is
    drawn uniformly from its vocabulary. Recalling the site's procedure for a task as read
    (``known`` given: the parameters a model read from the intent): each value is the read
    one, and a value the intent does not state (the answer of an information task) is ``""``.
    The same template code therefore builds the site and the plan a model composes from the
    intent (:func:`compose_plan`)."""

    def __init__(self, rng: np.random.Generator | None = None,
                 known: Mapping[str, str] | None = None):
        self.rng, self.known = rng, known

    def __call__(self, vocab: str, name: str | None = None) -> str:
        name = name or vocab
        if self.known is not None:
            return self.known.get(name, "")
        return str(self.rng.choice(V[vocab]))

    def pair(self, vocab: str, a: str, b: str) -> tuple[str, str]:
        """Two distinct values of ``vocab`` (parameters ``a`` and ``b``)."""
        if self.known is not None:
            return self.known.get(a, ""), self.known.get(b, "")
        x, y = self.rng.choice(V[vocab], size=2, replace=False)
        return str(x), str(y)


# ----------------------------------------------------------------------------- templates
# Each: Draw -> (intent, params, chain [(page title, steps)], records [(kind, record)],
# answer)


def shop_add_to_cart(d: Draw):
    c, i, q = d("category"), d("item"), d("qty")
    rec = {"item": i, "qty": "$qty"}
    return (f"Add {q} x {i} to the cart", {"category": c, "item": i, "qty": q},
            [("Shop home", [nav("link", c)]), (c, [nav("link", i)]),
             (i, [fill("Quantity", q, "qty"), commit("Add to cart", "cart", rec)])],
            [("cart", (("item", i), ("qty", q)))], None)


def shop_price(d: Draw):
    c, i, pr = d("category"), d("item"), d("price")
    return (f"What is the price of {i}?", {"category": c, "item": i},
            [("Shop home", [nav("link", c)]), (c, [nav("link", i)]),
             (i, [answer("Price", pr)])], [], pr)


def shop_wishlist(d: Draw):
    c, i = d("category"), d("item")
    return (f"Add {i} to my wish list", {"category": c, "item": i},
            [("Shop home", [nav("link", c)]), (c, [nav("link", i)]),
             (i, [commit("Add to wish list", "wishlist", {"item": i})])],
            [("wishlist", (("item", i),))], None)


def admin_stock(d: Draw):
    i, q = d("item"), d("count", "qty")
    return (f"Set the stock of {i} to {q}", {"item": i, "qty": q},
            [("Dashboard", [nav("link", "Catalog")]), ("Catalog", [nav("link", i)]),
             (f"Edit {i}", [fill("Stock", q, "stock"),
                            commit("Save", "stock", {"item": i, "stock": "$stock"})])],
            [("stock", (("item", i), ("stock", q)))], None)


def admin_cancel(d: Draw):
    o = d("order")
    return (f"Cancel order {o}", {"order": o},
            [("Dashboard", [nav("link", "Sales")]), ("Orders", [nav("link", f"Order {o}")]),
             (f"Order {o}", [commit("Cancel order", "cancel", {"order": o})])],
            [("cancel", (("order", o),))], None)


def admin_report(d: Draw):
    m, n = d("month"), d("count")
    return (f"How many orders were placed in {m}?", {"month": m},
            [("Dashboard", [nav("link", "Reports")]), ("Reports", [nav("link", f"Orders {m}")]),
             (f"Orders {m}", [answer("Order count", n)])], [], n)


def forum_post(d: Draw):
    f, t, b = d("forum"), d("title"), d("body")
    return (f"Post '{t}' with body '{b}' in f/{f}", {"forum": f, "title": t, "body": b},
            [("Forums", [nav("link", f"f/{f}")]), (f"f/{f}", [nav("button", "New post")]),
             ("Create post", [fill("Title", t, "title"), fill("Body", b, "body"),
                              commit("Submit", "post",
                                     {"forum": f, "title": "$title", "body": "$body"})])],
            [("post", (("body", b), ("forum", f), ("title", t)))], None)


def forum_upvote(d: Draw):
    f, t = d("forum"), d("title")
    return (f"Upvote the post '{t}' in f/{f}", {"forum": f, "title": t},
            [("Forums", [nav("link", f"f/{f}")]), (f"f/{f}", [nav("link", t)]),
             (t, [commit("Upvote", "vote", {"post": t})])],
            [("vote", (("post", t),))], None)


def forum_author(d: Draw):
    f, t, u = d("forum"), d("title"), d("user")
    return (f"Who wrote '{t}' in f/{f}?", {"forum": f, "title": t},
            [("Forums", [nav("link", f"f/{f}")]), (f"f/{f}", [nav("link", t)]),
             (t, [answer("Author", u)])], [], u)


def code_issue(d: Draw):
    r, t = d("repo"), d("title")
    return (f"Open an issue '{t}' in {r}", {"repo": r, "title": t},
            [("Projects", [nav("link", r)]), (r, [nav("link", "Issues")]),
             (f"{r} issues", [nav("button", "New issue")]),
             ("New issue", [fill("Title", t, "title"),
                            commit("Create issue", "issue", {"repo": r, "title": "$title"})])],
            [("issue", (("repo", r), ("title", t)))], None)


def code_star(d: Draw):
    r = d("repo")
    return (f"Star the repository {r}", {"repo": r},
            [("Projects", [nav("link", r)]), (r, [commit("Star", "star", {"repo": r})])],
            [("star", (("repo", r),))], None)


def code_committer(d: Draw):
    r, u = d("repo"), d("user")
    return (f"Who made the last commit to {r}?", {"repo": r},
            [("Projects", [nav("link", r)]), (r, [nav("link", "Commits")]),
             (f"{r} commits", [answer("Last author", u)])], [], u)


def map_route(d: Draw):
    a, b = d.pair("place", "from", "to")
    return (f"Get directions from {a} to {b}", {"from": a, "to": b},
            [("Map", [nav("button", "Directions")]),
             ("Directions", [fill("From", a, "from"), fill("To", b, "to"),
                             commit("Go", "route", {"from": "$from", "to": "$to"})])],
            [("route", (("from", a), ("to", b)))], None)


def map_address(d: Draw):
    pl, ad = d("place"), d("address")
    return (f"What is the address of {pl}?", {"place": pl},
            [("Map", [fill("Search", pl, "q"), nav("button", "Search")]),
             ("Search results", [nav("link", pl, query="q")]),
             (pl, [answer("Address", ad)])], [], ad)


def map_save(d: Draw):
    pl = d("place")
    return (f"Save {pl} to my places", {"place": pl},
            [("Map", [fill("Search", pl, "q"), nav("button", "Search")]),
             ("Search results", [nav("link", pl, query="q")]),
             (pl, [commit("Save", "saved", {"place": pl})])],
            [("saved", (("place", pl),))], None)


def wiki_fact(d: Draw):
    a, y = d("article"), d("year")
    return (f"In which year was {a} born?", {"article": a},
            [("Main page", [fill("Search", a, "q"), nav("button", "Search")]),
             ("Search results", [nav("link", a, query="q")]), (a, [answer("Born", y)])],
            [], y)


def wiki_edit(d: Draw):
    a, s = d("article"), d("summary")
    return (f"Edit {a} with summary '{s}'", {"article": a, "summary": s},
            [("Main page", [fill("Search", a, "q"), nav("button", "Search")]),
             ("Search results", [nav("link", a, query="q")]), (a, [nav("link", "Edit")]),
             (f"Editing {a}", [fill("Summary", s, "summary"),
                               commit("Save changes", "edit", {"article": a, "summary": "$summary"})])],
            [("edit", (("article", a), ("summary", s)))], None)


TEMPLATES: dict[str, tuple[Callable, ...]] = {
    "shop": (shop_add_to_cart, shop_price, shop_wishlist),
    "shop_admin": (admin_stock, admin_cancel, admin_report),
    "forum": (forum_post, forum_upvote, forum_author),
    "code": (code_issue, code_star, code_committer),
    "map": (map_route, map_address, map_save),
    "wiki": (wiki_fact, wiki_edit),
}


# ----------------------------------------------------------------------------- site builder


def _subgoal(kind_step: tuple, chain: list, p: int, values: dict[str, str],
             key: str = "", page: str = "") -> Subgoal:
    """The plan step of chain page ``p`` (title ``chain[p][0]``) for one template step;
    ``values``: the fields the chain fills (a commit's record is resolved against them)."""
    kind, title = kind_step[0], chain[p][0]
    base = dict(page=page, key=key, page_title=title)
    if kind == "nav":
        return Subgoal("nav", role=kind_step[1], label=kind_step[2], expect=chain[p + 1][0],
                       **base)
    if kind == "fill":
        return Subgoal("fill", role="textbox", label=kind_step[2], value=kind_step[3], **base)
    if kind == "commit":
        record = tuple((k, values.get(v[1:], "") if str(v).startswith("$") else v)
                       for k, v in kind_step[4])
        return Subgoal("commit", role="button", label=kind_step[2], expect=kind_step[3],
                       record=record, **base)
    return Subgoal("answer", role="text", label=kind_step[2], value=kind_step[3], **base)


def _fills(chain: list) -> dict[str, str]:
    return {st[4]: st[3] for _, steps in chain for st in steps if st[0] == "fill"}


def compose_plan(domain: str, template: str, params: Mapping[str, str]) -> tuple[Subgoal, ...]:
    """The plan a model composes from an intent it read as ``(template, params)``: the site's
    procedure for that kind of task (its template's chain, recalled with the read values; an
    answer is not known in advance, ``value = ""``). No element keys and no page names: only
    what is visible on the pages (titles, roles, labels)."""
    fn = next(t for t in TEMPLATES[domain] if t.__name__ == template)
    chain = fn(Draw(known=params))[2]
    values = _fills(chain)
    return tuple(_subgoal(st, chain, p, values) for p, (_, steps) in enumerate(chain)
                 for st in steps)


def build_task(domain: str, index: int, seed: int, ambiguous: float,
               n_distractors: int) -> Task:
    """Task ``index`` of ``domain``: a template drawn uniformly, its parameters, its site.
    Template, parameters and layout come from their own streams of ``(seed, domain, index)``,
    so raising ``ambiguous`` only adds decoys (one uniform per step decides each) to the same
    task. ``Task.plan`` (with element keys) is the environment's: it tracks true progress and
    is never shown to an agent."""
    templates = TEMPLATES[domain]
    rng = np.random.default_rng([seed, DOMAINS.index(domain), index, 0])
    template = templates[int(rng.integers(len(templates)))]
    intent, params, chain, records, expected_answer = template(Draw(rng))
    rng = np.random.default_rng([seed, DOMAINS.index(domain), index, 1])
    pages: dict[str, list[Element]] = {}
    plan: list[Subgoal] = []
    kinds = sorted({r[0] for t in templates for r in _records_of(t)})
    decoys: dict[str, Page] = {}
    values = _fills(chain)
    for p, (title, steps) in enumerate(chain):
        name = f"p{p}"
        els: list[Element] = []
        for s, step in enumerate(steps):
            key = f"{name}.s{s}"
            kind = step[0]
            wrong = _other(rng, str(step[-1] if kind != "nav" else step[2]))
            if kind == "nav":
                shown = ("field", step[3], step[2]) if step[3] else ()
                el = Element(key, step[1], step[2], effect=("goto", f"p{p + 1}"),
                             shown_if=shown)
                harm = ("goto", _decoy(decoys, f"{step[2]} (sponsored)"))
            elif kind == "fill":
                el = Element(key, "textbox", step[2], effect=("fill", step[4]))
                harm = ("fill", f"{step[4]}_sidebar")
            elif kind == "commit":
                el = Element(key, "button", step[2], effect=("commit", step[3], step[4]))
                harm = ("commit", step[3], (("decoy", "sponsored"),))
            else:
                el = Element(key, "text", step[2], text=step[3], stale_text=wrong)
                harm = ()
            els.append(el)
            plan.append(_subgoal(step, chain, p, values, key=key, page=name))
            if rng.random() < ambiguous:
                els.append(Element(f"{key}.decoy", el.role, el.label, "sidebar", harm,
                                   text=wrong if kind == "answer" else ""))
        for d, label in enumerate(rng.choice(DISTRACTORS[domain], size=n_distractors)):
            role = "link" if d % 2 == 0 else "button"
            effect = ("goto", _decoy(decoys, str(label))) if role == "link" else ()
            els.append(Element(f"{name}.d{d}", role, str(label), "sidebar" if d % 3 == 2
                               else "main", effect))
        # order by a hash of (seed, element key): adding a decoy moves no other element
        pages[name] = sorted(els, key=lambda e: zlib.crc32(f"{seed}/{index}/{e.key}".encode()))
    site_pages = {name: Page(name, chain[int(name[1:])][0], tuple(els))
                  for name, els in pages.items()}
    site_pages.update(decoys)
    return Task(domain, template.__name__, index, intent, params,
                Site(site_pages, "p0", tuple(kinds)), tuple(plan), tuple(records),
                expected_answer)


def _decoy(decoys: dict[str, Page], title: str) -> str:
    name = f"decoy:{title}"
    if name not in decoys:
        decoys[name] = Page(name, title, (Element(f"{name}.x", "button", "More", "main"),))
    return name


def _other(rng: np.random.Generator, value) -> str:
    """A wrong answer for a decoy text element (a draw is made for every step)."""
    n = int(rng.integers(1, 99))
    return str(value) + "?" if not str(value)[-1].isdigit() else str(n)


def _records_of(template: Callable) -> list:
    """The record kinds a template can write (from a throwaway draw)."""
    return template(Draw(np.random.default_rng(0)))[3]


def task_suite(domain: str, n_tasks: int, seed: int, ambiguous: float,
               n_distractors: int) -> list[Task]:
    """The ``n_tasks`` tasks of ``domain`` for ``seed`` (same tasks for every agent)."""
    return [build_task(domain, i, seed, ambiguous, n_distractors) for i in range(n_tasks)]
