"""The built-in demo search engine: a generated product catalog ranked by real full-text search.

SQLite (the embedded default) ranks with FTS5's bm25; PostgreSQL with ts_rank_cd over an
English tsvector. The catalog is generated deterministically (no download, no internet),
and /demo/search serves it as JSON like any search API a team would point SearchTweak at.

Its SQL stays here rather than in evaluations/queries.py: it is the demo engine itself,
not the application's data access. The FTS5 virtual table is no model (the ORM cannot
create, fill or MATCH it) and the PostgreSQL ranking is a tsvector expression; nothing
outside this module reads either.
"""

import functools
import random
import re
import time
from base64 import b64encode
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.db import IntegrityError, connection, transaction

from evaluations.endpoints.mapper import preset_mapper
from evaluations.models import DemoProduct
from metrics_engine.weighted import TAIL, traffic_segments

SEARCH_PATH = "/demo/search"  # where evaluations.urls serves the demo engine
CATALOG_SIZE = 3000
MAX_SIZE = 100
FTS_TABLE = "evaluations_demoproduct_fts"

CATEGORIES: dict[str, dict[str, list[str]]] = {
    "Footwear": {
        "nouns": ["running shoes", "hiking boots", "sandals", "sneakers", "loafers",
                  "ankle boots", "slippers", "trail runners", "rain boots"],
        "traits": ["waterproof", "lightweight", "leather", "breathable", "cushioned",
                   "slip-resistant", "vegan"],
        "uses": ["long runs", "muddy trails", "the office", "summer days", "winter walks"],
    },
    "Outerwear": {
        "nouns": ["rain jacket", "down parka", "fleece hoodie", "windbreaker", "wool coat",
                  "softshell jacket", "puffer vest"],
        "traits": ["insulated", "packable", "waterproof", "recycled", "hooded", "windproof"],
        "uses": ["commuting", "mountain hikes", "cold mornings", "travel", "city rain"],
    },
    "Kitchen": {
        "nouns": ["chef's knife", "cast iron skillet", "espresso machine", "blender",
                  "cutting board", "saucepan", "electric kettle", "dutch oven", "coffee grinder"],
        "traits": ["stainless steel", "non-stick", "dishwasher-safe", "professional",
                   "compact", "enamelled"],
        "uses": ["weeknight dinners", "slow cooking", "morning coffee", "meal prep", "baking"],
    },
    "Electronics": {
        "nouns": ["wireless headphones", "bluetooth speaker", "usb-c charger", "smartwatch",
                  "e-reader", "webcam", "mechanical keyboard", "power bank", "wireless mouse"],
        "traits": ["noise-cancelling", "fast-charging", "waterproof", "ergonomic", "portable",
                   "low-latency"],
        "uses": ["video calls", "gaming", "travel", "workouts", "reading at night"],
    },
    "Home": {
        "nouns": ["desk lamp", "throw blanket", "ceramic vase", "memory foam pillow",
                  "bookshelf", "office chair", "area rug", "wall clock", "bed sheets"],
        "traits": ["handmade", "organic cotton", "adjustable", "minimalist", "oak", "dimmable"],
        "uses": ["the living room", "a home office", "the bedroom", "reading corners"],
    },
    "Outdoors": {
        "nouns": ["camping tent", "sleeping bag", "trekking poles", "water bottle", "headlamp",
                  "hiking backpack", "camping stove", "hammock"],
        "traits": ["ultralight", "two-person", "insulated", "rechargeable", "durable",
                   "weatherproof"],
        "uses": ["backpacking", "festival camping", "alpine trips", "day hikes"],
    },
    "Sports": {
        "nouns": ["yoga mat", "dumbbells", "tennis racket", "bicycle helmet", "football",
                  "jump rope", "resistance bands", "swim goggles", "cycling gloves"],
        "traits": ["non-slip", "adjustable", "lightweight", "pro", "anti-fog", "padded"],
        "uses": ["home workouts", "the gym", "match day", "morning laps", "road cycling"],
    },
}
COLORS = {"red": "#d64545", "blue": "#3a6fd8", "black": "#2b2b2b", "white": "#e9e9e9",
          "green": "#3f9d5a", "grey": "#8a8f98", "navy": "#23345c", "yellow": "#e8c33a",
          "pink": "#e58fb0", "brown": "#8a5a3c"}
AUDIENCES = ["", "", "", "men's ", "women's ", "kids' "]
BRANDS = ["Northwind", "Alder & Co", "Kestrel", "Brightline", "Tern", "Lumen", "Solace",
          "Ridgeway", "Pebble", "Corvid", "Fjellmark", "Osprey Lane"]


def generate_catalog(size: int = CATALOG_SIZE, seed: int = 4) -> list[DemoProduct]:
    rng = random.Random(seed)
    products = []
    for number in range(1, size + 1):
        category = rng.choice(list(CATEGORIES))
        words = CATEGORIES[category]
        noun, trait, use = rng.choice(words["nouns"]), rng.choice(words["traits"]), \
            rng.choice(words["uses"])
        color, brand = rng.choice(list(COLORS)), rng.choice(BRANDS)
        audience = rng.choice(AUDIENCES) if category in ("Footwear", "Outerwear", "Sports") \
            else ""
        title = f"{brand} {trait} {color} {audience}{noun}"
        other = rng.choice([t for t in words["traits"] if t != trait])
        description = (f"A {trait}, {other} {noun} in {color}, made for {use}. "
                       f"{brand} designs it to last, with a two-year warranty.")
        products.append(DemoProduct(
            sku=f"D{number:05d}", title=title, description=description, category=category,
            brand=brand, color=color,
            price=Decimal(rng.randrange(900, 40000)) / 100,
        ))
    return products


def catalog_ensure() -> int:
    """Create the demo catalog and its full-text index once; return the product count."""
    count = DemoProduct.objects.count()
    if count:
        return count
    try:
        with transaction.atomic():
            products = DemoProduct.objects.bulk_create(generate_catalog(), batch_size=500)
            if connection.vendor == "sqlite":
                with connection.cursor() as cursor:
                    # Left over when tests flush the managed tables but not this one.
                    cursor.execute(f"DELETE FROM {FTS_TABLE}")
                    cursor.executemany(
                        f"INSERT INTO {FTS_TABLE} (rowid, title, description, category, brand, "
                        "color) VALUES (?, ?, ?, ?, ?, ?)",
                        [(p.pk, p.title, p.description, p.category, p.brand, p.color)
                         for p in products])
    except IntegrityError:
        pass  # another request generated it at the same moment
    return DemoProduct.objects.count()


def search_url(address: str) -> str:
    """The demo engine's search URL from DEMO_SEARCH_URL or --demo-url: a base address
    (http://127.0.0.1:8100) gets the demo path appended, a full search URL stays as it is."""
    parts = urlsplit(address.strip())
    path = parts.path.rstrip("/")
    if not path.endswith(SEARCH_PATH):
        path += SEARCH_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _terms(query: str) -> list[str]:
    return re.findall(r"\w+", query.lower())[:20]


# What shoppers ask the demo shop: each query, how often it is asked (a day's searches) and
# whether it names a kind of product (broad) or one with its traits (specific). The demo's
# query set is made of them (seed_demo); the head-tuned ranking below was tuned on the most
# asked.
SHOPPERS_QUERIES = [
    ("waterproof hiking boots", 900, "specific"), ("running shoes", 5200, "broad"),
    ("red sneakers", 700, "specific"), ("kids rain boots", 450, "specific"),
    ("noise cancelling headphones", 3100, "specific"),
    ("waterproof bluetooth speaker", 380, "specific"), ("usb-c charger", 2400, "broad"),
    ("cast iron skillet", 1300, "broad"), ("espresso machine", 1900, "broad"),
    ("chef's knife", 860, "broad"), ("non-stick saucepan", 240, "specific"),
    ("electric kettle", 1100, "broad"), ("coffee grinder", 760, "broad"),
    ("wool coat", 980, "broad"), ("packable rain jacket", 310, "specific"),
    ("women's down parka", 520, "specific"), ("fleece hoodie", 640, "broad"),
    ("two-person camping tent", 290, "specific"), ("ultralight sleeping bag", 170, "specific"),
    ("rechargeable headlamp", 140, "specific"), ("non-slip yoga mat", 410, "specific"),
    ("adjustable dumbbells", 830, "specific"), ("tennis racket", 350, "broad"),
    ("bicycle helmet", 600, "broad"), ("anti-fog swim goggles", 95, "specific"),
    ("dimmable desk lamp", 120, "specific"), ("memory foam pillow", 880, "specific"),
    ("ergonomic office chair", 1500, "specific"), ("organic cotton bed sheets", 260, "specific"),
    ("oak bookshelf", 75, "specific"), ("ceramic vase", 130, "broad"),
    ("throw blanket", 420, "broad"), ("smartwatch", 4100, "broad"), ("e-reader", 1200, "broad"),
    ("mechanical keyboard", 1400, "broad"), ("wireless mouse", 1700, "broad"),
    ("power bank", 2000, "broad"), ("webcam for video calls", 230, "specific"),
    ("hiking backpack", 560, "broad"), ("insulated water bottle", 690, "specific"),
    ("trekking poles", 160, "broad"), ("camping stove", 180, "broad"), ("hammock", 210, "broad"),
    ("leather loafers", 190, "specific"), ("summer sandals", 330, "specific"),
    ("slippers", 470, "broad"), ("resistance bands", 500, "broad"), ("jump rope", 220, "broad"),
    ("dutch oven", 540, "broad"), ("blender", 1600, "broad"),
]


# ranking=…: "relevance" is the full-text ranking; "cheap-first" is a deliberately worse one
# (the top CHEAP_FIRST_DEPTH by relevance, re-sorted by price), so the demo, and anyone
# trying compare or a regression verdict, has two models that really differ. "head-tuned"
# is a ranking tuned on the shop's most asked queries: relevance for those in the head and
# torso of SHOPPERS_QUERIES' traffic (metrics_engine.weighted's default cuts), cheap-first
# for the long tail the tuning never saw, so a verdict per segment has something to find.
RANKINGS = ("relevance", "cheap-first", "head-tuned")
CHEAP_FIRST_DEPTH = 100


@functools.cache
def head_tuned_queries() -> frozenset[str]:
    """The queries the head-tuned ranking ranks by relevance: the head and torso of what
    shoppers ask."""
    segments = traffic_segments([weight for _, weight, _ in SHOPPERS_QUERIES])
    return frozenset(text for (text, _, _), segment in zip(SHOPPERS_QUERIES, segments,
                                                           strict=True) if segment != TAIL)


def search(query: str, *, size: int = 10, category: str = "",
           ranking: str = "relevance") -> dict[str, Any]:
    """The ranked answer for `query`, shaped like a typical JSON search API."""
    if ranking not in RANKINGS:
        raise ValueError(f"ranking must be one of {', '.join(RANKINGS)}")
    if ranking == "head-tuned":
        ranking = "relevance" if query.strip().lower() in head_tuned_queries() else "cheap-first"
    started = time.monotonic()
    catalog_ensure()
    size = max(1, min(size, MAX_SIZE))
    depth = max(size, CHEAP_FIRST_DEPTH) if ranking == "cheap-first" else size
    terms = _terms(query)
    ids: list[int] = []
    total = 0
    if terms:
        if connection.vendor == "sqlite":
            ids, total = _search_sqlite(terms, depth, category)
        else:
            ids, total = _search_postgres(terms, depth, category)
    products = DemoProduct.objects.in_bulk(ids)
    if ranking == "cheap-first":
        ids = sorted(ids, key=lambda pk: (products[pk].price, pk))[:size]
    hits = [_hit(products[pk]) for pk in ids if pk in products]
    return {"query": query, "total": total, "took_ms": round((time.monotonic() - started) * 1000),
            "hits": hits}


def _search_sqlite(terms: list[str], size: int, category: str) -> tuple[list[int], int]:
    # Each term quoted: the user's text never becomes FTS5 syntax. OR + bm25 ranks the
    # documents that match more (and rarer) terms first, as a search engine would.
    match = " OR ".join(f'"{term}"' for term in terms)
    where, params = f"{FTS_TABLE} MATCH %s", [match]
    if category:
        where += " AND category = %s"
        params.append(category)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {FTS_TABLE} WHERE {where}", params)
        total = cursor.fetchone()[0]
        # Column weights: title, description, category, brand, color.
        cursor.execute(
            f"SELECT rowid FROM {FTS_TABLE} WHERE {where} "
            f"ORDER BY bm25({FTS_TABLE}, 10.0, 2.0, 4.0, 3.0, 5.0), rowid LIMIT %s",
            [*params, size])
        return [row[0] for row in cursor.fetchall()], total


def _search_postgres(terms: list[str], size: int, category: str) -> tuple[list[int], int]:
    # search_vector and ranked_vector are stored with each product (evaluations migration
    # 0020): to_tsvector over every row at every search cost ~0.3 s a search.
    where = "search_vector @@ websearch_to_tsquery('english', %s)"
    params: list[Any] = [" or ".join(terms)]
    if category:
        where += " AND category = %s"
        params.append(category)
    table = DemoProduct._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", params)
        total = cursor.fetchone()[0]
        cursor.execute(
            f"SELECT id FROM {table} WHERE {where} ORDER BY ts_rank_cd(ranked_vector, "
            f"websearch_to_tsquery('english', %s)) DESC, id LIMIT %s",
            [*params, params[0], size])
        return [row[0] for row in cursor.fetchall()], total


def _stem(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def product_noun(product: DemoProduct) -> str:
    """The catalog noun a product's title ends with ("running shoes"), or its last word."""
    nouns = CATEGORIES.get(product.category, {}).get("nouns", [])
    title = product.title.lower()
    return next((noun for noun in sorted(nouns, key=len, reverse=True)
                 if title.endswith(noun)), title.split()[-1])


def relevance(query: str, product: DemoProduct) -> int:
    """How well a product answers a query on the graded scale, as the demo's guidelines put
    it: 3 exactly what was asked for, 2 the right kind of product that misses one detail
    (another color, trait or audience), 1 the right kind missing more, or the same category,
    0 unrelated. The demo's simulated graders start from this and disagree now and then."""
    query_terms = {_stem(term) for term in _terms(query)}
    noun_terms = {_stem(term) for term in _terms(product_noun(product))}
    # Details count where a shopper looks first: the title (a trait only the description
    # mentions is not what the listing promises).
    title_terms = {_stem(term) for term in _terms(product.title)}
    head = _stem(_terms(product_noun(product))[-1])
    if head in query_terms:
        missing = query_terms - noun_terms - title_terms
        return 3 if not missing else 2 if len(missing) == 1 else 1
    category_terms = {_stem(term) for noun in CATEGORIES.get(product.category, {}).get(
        "nouns", []) for term in _terms(noun)}
    return 1 if query_terms & category_terms else 0


# A shape per category, so tiles of one color still differ at a glance.
_CATEGORY_SHAPES = {
    "Footwear": '<path d="M14 62h48l14 10v8H14z" fill="{ink}" opacity=".35"/>',
    "Outerwear": '<path d="M30 16l18 10 18-10 14 16-10 8v36H26V40l-10-8z" fill="{ink}" '
                 'opacity=".3"/>',
    "Kitchen": '<circle cx="48" cy="50" r="26" fill="none" stroke="{ink}" stroke-width="6" '
               'opacity=".35"/>',
    "Electronics": '<rect x="18" y="26" width="60" height="40" rx="6" fill="none" '
                   'stroke="{ink}" stroke-width="6" opacity=".35"/>',
    "Home": '<path d="M48 14l34 28v40H14V42z" fill="{ink}" opacity=".3"/>',
    "Outdoors": '<path d="M48 14l36 66H12z" fill="{ink}" opacity=".3"/>',
    "Sports": '<circle cx="48" cy="48" r="30" fill="{ink}" opacity=".3"/>',
}


def product_image(product: DemoProduct) -> str:
    """A small SVG tile as a data URI: the product's color, its category's shape and name,
    and the initials of what it is ("RS" for running shoes)."""
    fill = COLORS.get(product.color, "#8a8f98")
    ink = "#1c2430" if product.color in ("white", "yellow", "pink") else "#ffffff"
    initials = "".join(word[0] for word in product_noun(product).split()[-2:]).upper()
    shape = _CATEGORY_SHAPES.get(product.category, "").format(ink=ink)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="96" height="96" viewBox="0 0 96 96">'
           f'<rect width="96" height="96" rx="14" fill="{fill}"/>{shape}'
           f'<text x="48" y="56" font-family="sans-serif" font-size="28" font-weight="700" '
           f'text-anchor="middle" fill="{ink}">{initials}</text>'
           f'<text x="48" y="88" font-family="sans-serif" font-size="11" '
           f'text-anchor="middle" fill="{ink}">{product.category}</text></svg>')
    return "data:image/svg+xml;base64," + b64encode(svg.encode()).decode()


def _hit(product: DemoProduct) -> dict[str, Any]:
    return {"id": product.sku, "title": product.title, "description": product.description,
            "category": product.category, "brand": product.brand, "color": product.color,
            "price": float(product.price), "image": product_image(product)}


DEMO_MAPPER = preset_mapper("demo")  # the endpoint form offers the same preset


def in_process_transport() -> httpx.MockTransport:
    """An httpx transport that answers demo-engine requests by calling `search` directly.

    seed_demo fetches through it: the same request building, size cap, JSON parsing and
    mapper as a real fetch, without a server (make run seeds before it serves).
    """
    def handle(request: httpx.Request) -> httpx.Response:
        if not request.url.path.rstrip("/").endswith(SEARCH_PATH):
            return httpx.Response(404, json={"error": "not the demo engine"})
        params = request.url.params
        try:
            size = int(params.get("size", 10))
        except ValueError:
            return httpx.Response(400, json={"error": "size must be an integer"})
        ranking = params.get("ranking", "relevance")
        if ranking not in RANKINGS:
            return httpx.Response(400, json={"error": f"ranking must be one of {RANKINGS}"})
        return httpx.Response(200, json=search(params.get("q", ""), size=size,
                                               category=params.get("category", ""),
                                               ranking=ranking))

    return httpx.MockTransport(handle)
