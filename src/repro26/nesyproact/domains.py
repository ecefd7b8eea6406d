"""Six small web domains mirroring WebArena's (shop, shop_admin, forum, code, map, wiki): task
templates filled from a seeded ``numpy.random.Generator``.

A template returns the intent, a chain of pages (each with the plan steps taken on it; a page's
last step navigates to the next page), the expected records and the expected answer.
:func:`build_task` turns the chain into a :class:`~repro26.nesyproact.env.Site` (distractor
links to decoy pages, no-op buttons and, at rate ``ambiguous``, a sidebar element with the
target's label and a harmful effect) and the plan of :class:`~repro26.nesyproact.env.Subgoal`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np

from repro26.nesyproact.env import Element, Page, Site, Subgoal, Task

DOMAINS = ("shop", "shop_admin", "forum", "code", "map", "wiki")

# ----------------------------------------------------------------------------- plan steps


def nav(role: str, label: str) -> tuple:
    return ("nav", role, label)


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


def _pick(rng: np.random.Generator, name: str) -> str:
    return str(rng.choice(V[name]))


# ----------------------------------------------------------------------------- templates
# Each: rng -> (intent, params, chain [(page title, steps)], records [(kind, record)], answer)


def shop_add_to_cart(rng):
    c, i, q = _pick(rng, "category"), _pick(rng, "item"), _pick(rng, "qty")
    rec = {"item": i, "qty": "$qty"}
    return (f"Add {q} x {i} to the cart", {"category": c, "item": i, "qty": q},
            [("Shop home", [nav("link", c)]), (c, [nav("link", i)]),
             (i, [fill("Quantity", q, "qty"), commit("Add to cart", "cart", rec)])],
            [("cart", (("item", i), ("qty", q)))], None)


def shop_price(rng):
    c, i, p = _pick(rng, "category"), _pick(rng, "item"), _pick(rng, "price")
    return (f"What is the price of {i}?", {"category": c, "item": i},
            [("Shop home", [nav("link", c)]), (c, [nav("link", i)]),
             (i, [answer("Price", p)])], [], p)


def shop_wishlist(rng):
    c, i = _pick(rng, "category"), _pick(rng, "item")
    return (f"Add {i} to my wish list", {"category": c, "item": i},
            [("Shop home", [nav("link", c)]), (c, [nav("link", i)]),
             (i, [commit("Add to wish list", "wishlist", {"item": i})])],
            [("wishlist", (("item", i),))], None)


def admin_stock(rng):
    i, q = _pick(rng, "item"), _pick(rng, "count")
    return (f"Set the stock of {i} to {q}", {"item": i, "qty": q},
            [("Dashboard", [nav("link", "Catalog")]), ("Catalog", [nav("link", i)]),
             (f"Edit {i}", [fill("Stock", q, "stock"),
                            commit("Save", "stock", {"item": i, "stock": "$stock"})])],
            [("stock", (("item", i), ("stock", q)))], None)


def admin_cancel(rng):
    o = _pick(rng, "order")
    return (f"Cancel order {o}", {"order": o},
            [("Dashboard", [nav("link", "Sales")]), ("Orders", [nav("link", f"Order {o}")]),
             (f"Order {o}", [commit("Cancel order", "cancel", {"order": o})])],
            [("cancel", (("order", o),))], None)


def admin_report(rng):
    m, n = _pick(rng, "month"), _pick(rng, "count")
    return (f"How many orders were placed in {m}?", {"month": m},
            [("Dashboard", [nav("link", "Reports")]), ("Reports", [nav("link", f"Orders {m}")]),
             (f"Orders {m}", [answer("Order count", n)])], [], n)


def forum_post(rng):
    f, t, b = _pick(rng, "forum"), _pick(rng, "title"), _pick(rng, "body")
    return (f"Post '{t}' with body '{b}' in f/{f}", {"forum": f, "title": t, "body": b},
            [("Forums", [nav("link", f"f/{f}")]), (f"f/{f}", [nav("button", "New post")]),
             ("Create post", [fill("Title", t, "title"), fill("Body", b, "body"),
                              commit("Submit", "post",
                                     {"forum": f, "title": "$title", "body": "$body"})])],
            [("post", (("body", b), ("forum", f), ("title", t)))], None)


def forum_upvote(rng):
    f, t = _pick(rng, "forum"), _pick(rng, "title")
    return (f"Upvote the post '{t}' in f/{f}", {"forum": f, "title": t},
            [("Forums", [nav("link", f"f/{f}")]), (f"f/{f}", [nav("link", t)]),
             (t, [commit("Upvote", "vote", {"post": t})])],
            [("vote", (("post", t),))], None)


def forum_author(rng):
    f, t, u = _pick(rng, "forum"), _pick(rng, "title"), _pick(rng, "user")
    return (f"Who wrote '{t}' in f/{f}?", {"forum": f, "title": t},
            [("Forums", [nav("link", f"f/{f}")]), (f"f/{f}", [nav("link", t)]),
             (t, [answer("Author", u)])], [], u)


def code_issue(rng):
    r, t = _pick(rng, "repo"), _pick(rng, "title")
    return (f"Open an issue '{t}' in {r}", {"repo": r, "title": t},
            [("Projects", [nav("link", r)]), (r, [nav("link", "Issues")]),
             (f"{r} issues", [nav("button", "New issue")]),
             ("New issue", [fill("Title", t, "title"),
                            commit("Create issue", "issue", {"repo": r, "title": "$title"})])],
            [("issue", (("repo", r), ("title", t)))], None)


def code_star(rng):
    r = _pick(rng, "repo")
    return (f"Star the repository {r}", {"repo": r},
            [("Projects", [nav("link", r)]), (r, [commit("Star", "star", {"repo": r})])],
            [("star", (("repo", r),))], None)


def code_committer(rng):
    r, u = _pick(rng, "repo"), _pick(rng, "user")
    return (f"Who made the last commit to {r}?", {"repo": r},
            [("Projects", [nav("link", r)]), (r, [nav("link", "Commits")]),
             (f"{r} commits", [answer("Last author", u)])], [], u)


def map_route(rng):
    a, b = rng.choice(V["place"], size=2, replace=False)
    return (f"Get directions from {a} to {b}", {"from": str(a), "to": str(b)},
            [("Map", [nav("button", "Directions")]),
             ("Directions", [fill("From", str(a), "from"), fill("To", str(b), "to"),
                             commit("Go", "route", {"from": "$from", "to": "$to"})])],
            [("route", (("from", str(a)), ("to", str(b))))], None)


def map_address(rng):
    p, ad = _pick(rng, "place"), _pick(rng, "address")
    return (f"What is the address of {p}?", {"place": p},
            [("Map", [fill("Search", p, "q"), nav("button", "Search")]),
             ("Search results", [nav("link", p)]), (p, [answer("Address", ad)])], [], ad)


def map_save(rng):
    p = _pick(rng, "place")
    return (f"Save {p} to my places", {"place": p},
            [("Map", [fill("Search", p, "q"), nav("button", "Search")]),
             ("Search results", [nav("link", p)]), (p, [commit("Save", "saved", {"place": p})])],
            [("saved", (("place", p),))], None)


def wiki_fact(rng):
    a, y = _pick(rng, "article"), _pick(rng, "year")
    return (f"In which year was {a} born?", {"article": a},
            [("Main page", [fill("Search", a, "q"), nav("button", "Search")]),
             ("Search results", [nav("link", a)]), (a, [answer("Born", y)])], [], y)


def wiki_edit(rng):
    a, s = _pick(rng, "article"), _pick(rng, "summary")
    return (f"Edit {a} with summary '{s}'", {"article": a, "summary": s},
            [("Main page", [fill("Search", a, "q"), nav("button", "Search")]),
             ("Search results", [nav("link", a)]), (a, [nav("link", "Edit")]),
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


def build_task(domain: str, index: int, seed: int, ambiguous: float,
               n_distractors: int) -> Task:
    """Task ``index`` of ``domain``: a template drawn uniformly, its parameters, its site.
    Template, parameters and layout come from their own streams of ``(seed, domain, index)``,
    so raising ``ambiguous`` only adds decoys (one uniform per step decides each) to the same
    task."""
    templates = TEMPLATES[domain]
    rng = np.random.default_rng([seed, DOMAINS.index(domain), index, 0])
    template = templates[int(rng.integers(len(templates)))]
    intent, params, chain, records, expected_answer = template(rng)
    rng = np.random.default_rng([seed, DOMAINS.index(domain), index, 1])
    pages: dict[str, list[Element]] = {}
    plan: list[Subgoal] = []
    kinds = sorted({r[0] for t in templates for r in _records_of(t)})
    decoys: dict[str, Page] = {}
    for p, (title, steps) in enumerate(chain):
        name = f"p{p}"
        els: list[Element] = []
        for s, step in enumerate(steps):
            key = f"{name}.s{s}"
            kind = step[0]
            if kind == "nav":
                el = Element(key, step[1], step[2], effect=("goto", f"p{p + 1}"))
                sg = Subgoal("nav", name, step[1], step[2], expect=chain[p + 1][0], key=key,
                             page_title=title)
                harm = ("goto", _decoy(decoys, f"{step[2]} (sponsored)"))
            elif kind == "fill":
                el = Element(key, "textbox", step[2], effect=("fill", step[4]))
                sg = Subgoal("fill", name, "textbox", step[2], value=step[3], key=key,
                             page_title=title)
                harm = ("fill", f"{step[4]}_sidebar")
            elif kind == "commit":
                el = Element(key, "button", step[2], effect=("commit", step[3], step[4]))
                sg = Subgoal("commit", name, "button", step[2], expect=step[3], key=key,
                             page_title=title)
                harm = ("commit", step[3], (("decoy", "sponsored"),))
            else:
                el = Element(key, "text", step[2], text=step[3])
                sg = Subgoal("answer", name, "text", step[2], value=step[3], key=key,
                             page_title=title)
                harm = ()
            els.append(el)
            plan.append(sg)
            wrong = _other(rng, str(step[-1]))
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
    return template(np.random.default_rng(0))[3]


def task_suite(domain: str, n_tasks: int, seed: int, ambiguous: float,
               n_distractors: int) -> list[Task]:
    """The ``n_tasks`` tasks of ``domain`` for ``seed`` (same tasks for every agent)."""
    return [build_task(domain, i, seed, ambiguous, n_distractors) for i in range(n_tasks)]
