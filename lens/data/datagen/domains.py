"""The four domains of the generator and the cast of one scope.

A domain knows its vocabulary (entities, metrics, changes, people, routine notes); ``cast``
draws one concrete scope from it with a seeded RNG, so two scopes of one domain tell the same
kind of story about different entities, numbers and people.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    label: str
    unit: str = ""
    decimals: int = 0
    prefix: str = ""

    def num(self, value: float) -> str:
        return f"{value:,.{self.decimals}f}"

    def fmt(self, value: float) -> str:
        """The figure as every episode and key fact writes it, e.g. ``412 ms``, ``$9,740``."""
        text = f"{self.prefix}{self.num(value)}"
        if self.unit == "%":
            return text + "%"
        return f"{text} {self.unit}" if self.unit else text

    def step(self) -> float:
        return 10.0 ** -self.decimals


@dataclass(frozen=True)
class Peer:
    """An entity reported beside the storyline's target: routine noise, one harmless spike."""

    name: str
    metric: Metric
    base: float
    spread: float  # relative day-to-day noise


@dataclass(frozen=True)
class OtherUnit:
    """The subject of distractor episodes: another team, patient, ledger or product line."""

    name: str
    peers: tuple[Peer, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Cast:
    domain: str
    org: str
    report: str  # what one signal episode is, e.g. "daily operations report"
    target: str
    subject: str  # what the questions ask about, e.g. "geo-lookup p99 latency"
    primary: Metric
    primary_base: float
    threshold: float
    threshold_name: str  # "p99 SLO", "upper reference limit", ...
    secondary_subject: str
    secondary: Metric
    secondary_base: float
    secondary_end: float
    volume_subject: str
    volume: Metric
    volume_base: float
    volume_hypothesis: str  # the alternative explanation a "negative" question probes
    peers: tuple[Peer, ...]
    onset_id: str
    onset_text: str
    herring_id: str
    herring_text: str
    remedy: str  # what to do once the cause is known
    correction_reason: str
    staff: tuple[str, ...]
    notes: tuple[str, ...]
    others: tuple[OtherUnit, ...]
    cadence_days: int = 1

    @property
    def threshold_text(self) -> str:
        return f"the {self.primary.fmt(self.threshold)} {self.threshold_name}"


def _pick(rng: random.Random, pool: list[str], k: int) -> list[str]:
    return rng.sample(pool, k)


def _id(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.randint(1000, 9899)}"


# -- ops ------------------------------------------------------------------------------------------
_OPS_STAFF = ["J. Martinez", "R. Singh", "A. Novak", "K. Osei", "M. Larsen", "T. Ito",
              "L. Moreau", "S. Haddad", "P. Adeyemi", "C. Brandt"]
_OPS_NOTES = [
    "Rotated gateway access logs to the new bucket policy.",
    "Certificate renewal for api.example.com scheduled for next week.",
    "A/B test 'checkout-v2' holding at 15% rollout.",
    "Runbook for cache warm-up reviewed; no edits needed.",
    "Quarterly restore drill for the orders database passed.",
    "Paged once for a flapping disk alert on a build agent; auto-resolved.",
    "Capacity review: all clusters below 60% CPU at peak.",
    "Synthetic checks from three regions all green.",
    "Postmortem action items from last month: 7 of 9 closed.",
    "Dependency dashboard moved to the new observability workspace.",
    "Feature flag cleanup removed 12 stale flags.",
    "Log retention for debug streams cut to 7 days as planned.",
]


def ops_cast(rng: random.Random) -> Cast:
    org = rng.choice(["checkout platform", "payments platform", "booking platform",
                      "storefront platform"])
    target, *peer_names = _pick(rng, ["geo-lookup", "fx-rates", "address-verify", "tax-calc",
                                      "inventory-sync", "auth", "catalog", "search",
                                      "recommendations", "notifications"], 5)
    caller = rng.choice(["fraud-check", "pricing", "cart", "order-router"])
    ms = Metric("p99", "ms")
    change = rng.choice([
        ("client connection pool max lowered from 200 to 60", "restore the connection pool to "
         "200 and cap retries"),
        ("client timeout raised from 2 s to 8 s with 5 retries", "restore the 2 s timeout and "
         "cap retries"),
        ("response cache TTL cut from 300 s to 20 s", "restore the 300 s cache TTL"),
    ])
    herring_svc = rng.choice(["search-api", "catalog-api", "service-c", "email-worker"])
    threshold = float(rng.choice([450, 500, 550]))
    teams: list[tuple[str, list[tuple[str, Metric, float, float]], list[str]]] = [
        ("DNS team", [("zone-transfers", Metric("p95", "ms"), 900, 1300),
                      ("resolver", Metric("cache hit", "%", 1), 86, 92),
                      ("authoritative", Metric("p95", "ms"), 12, 30)],
         ["Signed 3 new zones with DNSSEC.", "Lowered TTL on two records ahead of a "
          "migration.", "Lint found 2 zonefile warnings; fixed."]),
        ("Storage team", [("object-store", Metric("p95 write", "ms"), 60, 140),
                          ("block-volumes", Metric("IOPS utilisation", "%", 1), 40, 70),
                          ("compaction", Metric("backlog", "GB"), 20, 90)],
         ["Rebalanced 4 shards after adding a node.", "Compaction window moved to "
          "02:00 UTC.", "Snapshot verification passed for all volumes."]),
        ("Identity team", [("sso", Metric("p95 login", "ms"), 250, 420),
                           ("token-service", Metric("error rate", "%", 2), 0.02, 0.2),
                           ("directory-sync", Metric("duration", "min"), 8, 20)],
         ["Rotated signing keys on schedule.", "Quarterly access review started.",
          "One break-glass login validated against its change ticket."]),
        ("Data pipeline team", [("ingest", Metric("lag", "s"), 20, 90),
                                ("warehouse-load", Metric("duration", "min"), 25, 50),
                                ("stream-proc", Metric("consumer lag", "s"), 5, 40)],
         ["Backfill of March events finished.", "Schema change to orders topic "
          "reviewed.", "Nightly dbt run succeeded."]),
    ]
    others = tuple(
        OtherUnit(
            name=team,
            peers=tuple(Peer(n, m, rng.uniform(lo, hi), 0.04) for n, m, lo, hi in rows),
            notes=tuple(notes),
        )
        for team, rows, notes in teams
    )
    return Cast(
        domain="ops",
        org=org,
        report="daily operations report",
        target=target,
        subject=f"{target} p99 latency",
        primary=ms,
        primary_base=rng.uniform(170, 240),
        threshold=threshold,
        threshold_name="p99 SLO",
        secondary_subject=f"{caller} retries",
        secondary=Metric("retries", "per hour"),
        secondary_base=rng.uniform(25, 60),
        secondary_end=rng.uniform(700, 1300),
        volume_subject=f"{target} request volume",
        volume=Metric("requests", "requests"),
        volume_base=rng.uniform(110_000, 190_000),
        volume_hypothesis="a rise in traffic",
        peers=tuple(Peer(n, ms, rng.uniform(60, 320), 0.05) for n in peer_names),
        onset_id=_id(rng, "CHG"),
        onset_text=f"{target} {change[0]}",
        herring_id=_id(rng, "DEP"),
        herring_text=f"deployed {herring_svc} v{rng.randint(2, 6)}.{rng.randint(0, 9)}."
                     f"{rng.randint(0, 9)}",
        remedy=change[1],
        correction_reason="the collector double-counted a retry burst",
        staff=tuple(_pick(rng, _OPS_STAFF, 5)),
        notes=tuple(_OPS_NOTES),
        others=others,
    )


# -- clinical -------------------------------------------------------------------------------------
_PATIENTS = ["R. Okafor", "M. Lindqvist", "H. Tanaka", "D. Moreno", "E. Kowalski", "S. Nair",
             "G. Fitzgerald", "A. Haddad", "B. Olsen", "L. Achebe", "F. Rossi", "W. Chen"]
_CLIN_STAFF = ["Dr. A. Okonjo", "Dr. P. Keller", "Dr. S. Varga", "Nurse J. Kim",
               "Nurse T. Abara", "Nurse L. Hughes", "Pharmacist M. Duarte", "Dr. C. Ng"]
_CLIN_NOTES = [
    "Mobilising with frame; no falls.",
    "Pain controlled on regular paracetamol.",
    "Eating and drinking well; weight stable.",
    "Slept through the night; no PRN use.",
    "Family visited; questions about discharge planning answered.",
    "Skin intact; pressure areas checked.",
    "Observations within normal limits overnight.",
    "Physio review: exercises tolerated.",
    "Medication chart reconciled with the GP list.",
    "Bowels open; no concerns raised.",
]


def clinical_cast(rng: random.Random) -> Cast:
    patient, *other_patients = _pick(rng, _PATIENTS, 5)
    variant = rng.choice([
        ("creatinine", Metric("creatinine", "umol/L"), (72, 88), 110.0,
         "lisinopril increased from 10 mg to 20 mg daily",
         "potassium", Metric("potassium", "mmol/L", 1), (4.0, 4.3), (5.5, 5.9),
         "reduce lisinopril back to 10 mg and recheck renal function"),
        ("ALT", Metric("ALT", "U/L"), (22, 32), 56.0,
         "atorvastatin increased from 20 mg to 80 mg nightly",
         "AST", Metric("AST", "U/L"), (20, 28), (90, 120),
         "reduce atorvastatin back to 20 mg and repeat liver tests"),
        ("INR", Metric("INR", "", 2), (2.1, 2.5), 3.5,
         "clarithromycin started alongside warfarin 5 mg",
         "bruising score", Metric("bruising score", "points"), (1, 2), (7, 9),
         "stop clarithromycin or reduce warfarin and recheck INR daily"),
    ])
    lab, metric, base_rng, thr, change, sec_name, sec_metric, sec_base, sec_end, remedy = variant
    lab_peers = [
        ("sodium", Metric("sodium", "mmol/L"), 137, 141),
        ("haemoglobin", Metric("haemoglobin", "g/L"), 118, 134),
        ("glucose", Metric("glucose", "mmol/L", 1), 5.0, 7.2),
        ("WBC", Metric("WBC", "x10^9/L", 1), 5.5, 8.5),
        ("CRP", Metric("CRP", "mg/L"), 3, 9),
    ]
    rng.shuffle(lab_peers)
    others = tuple(
        OtherUnit(
            name=f"{p} (bed {rng.randint(1, 28)})",
            peers=tuple(Peer(n, m, rng.uniform(lo, hi), 0.05) for n, m, lo, hi in
                        rng.sample(lab_peers, 3)),
            notes=tuple(rng.sample(_CLIN_NOTES, 4)),
        )
        for p in other_patients
    )
    ward = rng.choice(["Ward 4B", "Ward 7", "Ward 3A", "Ward 9C"])
    return Cast(
        domain="clinical",
        org=f"{ward}, patient {patient}",
        report="ward round note",
        target=patient,
        subject=f"{patient}'s {lab}",
        primary=metric,
        primary_base=rng.uniform(*base_rng),
        threshold=thr,
        threshold_name="upper reference limit",
        secondary_subject=f"{patient}'s {sec_name}",
        secondary=sec_metric,
        secondary_base=rng.uniform(*sec_base),
        secondary_end=rng.uniform(*sec_end),
        volume_subject=f"{patient}'s fluid intake",
        volume=Metric("fluid intake", "mL"),
        volume_base=rng.uniform(1500, 2100),
        volume_hypothesis="dehydration from lower fluid intake",
        peers=tuple(Peer(n, m, rng.uniform(lo, hi), 0.04) for n, m, lo, hi in lab_peers[:3]),
        onset_id=_id(rng, "MED"),
        onset_text=change,
        herring_id=_id(rng, "PT"),
        herring_text=rng.choice(["started daily physiotherapy", "switched to a low-sodium diet",
                                 "moved to a side room for noise reasons"]),
        remedy=remedy,
        correction_reason="the sample was haemolysed and the lab reissued the result",
        staff=tuple(_pick(rng, _CLIN_STAFF, 5)),
        notes=tuple(_CLIN_NOTES),
        others=others,
    )


# -- finance --------------------------------------------------------------------------------------
_VENDORS = ["Halvorsen Supply", "Brightline Facilities", "Kestrel Logistics",
            "Orwell Print Services", "Marlow IT Services", "Pemberton Catering",
            "Quayside Cleaning", "Northgate Security", "Ashby Office Furniture"]
_FIN_STAFF = ["AP clerk N. Brooks", "AP clerk V. Petrova", "Controller D. Amadi",
              "Analyst F. Ruiz", "Treasury lead H. Berg", "Auditor K. Mwangi"]
_FIN_NOTES = [
    "Payment run released on schedule.",
    "Two duplicate invoices caught by the matching rule and voided.",
    "Bank reconciliation for the operating account complete.",
    "Vendor master: 3 address changes verified by call-back.",
    "Early-payment discount taken on 5 invoices.",
    "Month-end accrual template rolled forward.",
    "Credit note from a courier applied against open balance.",
    "Purchase order backlog down to 14 items.",
    "Expense card statements imported without errors.",
    "FX revaluation posted for the EUR account.",
]


def finance_cast(rng: random.Random) -> Cast:
    company = rng.choice(["Calder Industries", "Norland Foods", "Vesta Health Group",
                          "Brightwater Retail"])
    vendor, *peer_vendors = _pick(rng, _VENDORS, 6)
    limit = rng.choice([10_000, 15_000, 20_000])
    money = Metric("month-to-date billing", prefix="$")
    others = tuple(
        OtherUnit(
            name=name,
            peers=tuple(Peer(n, m, rng.uniform(lo, hi), 0.04) for n, m, lo, hi in rows),
            notes=tuple(notes),
        )
        for name, rows, notes in [
            ("Payroll", [("gross pay", Metric("gross pay", prefix="$"), 1.1e6, 1.4e6),
                         ("overtime", Metric("overtime", "hours"), 900, 1500),
                         ("headcount", Metric("headcount", "staff"), 610, 680)],
             ["Payroll run approved by two signatories.", "Tax code updates applied.",
              "Three leavers processed."]),
            ("Treasury", [("operating account", Metric("balance", prefix="$"), 2.2e6, 3.1e6),
                          ("credit line", Metric("drawn", prefix="$"), 0, 4e5),
                          ("FX exposure", Metric("EUR exposure", prefix="$"), 3e5, 6e5)],
             ["Cash forecast updated for the next 13 weeks.", "Sweep to the reserve account "
              "executed.", "Hedge confirmation received."]),
            ("Expenses", [("card spend", Metric("card spend", prefix="$"), 4e4, 9e4),
                          ("travel", Metric("travel", prefix="$"), 1e4, 3e4),
                          ("claims", Metric("open claims", "claims"), 30, 70)],
             ["Policy reminder sent about receipt deadlines.", "Two claims returned for "
              "missing receipts.", "Mileage rate updated."]),
        ]
    )
    return Cast(
        domain="finance",
        org=f"Accounts Payable, {company}",
        report="AP daily batch report",
        target=vendor,
        subject=f"{vendor}'s 30-day invoice count",
        primary=Metric("invoices (30 days)", "invoices"),
        primary_base=rng.uniform(3, 5),
        threshold=float(rng.choice([18, 20, 24])),
        threshold_name="vendor review trigger",
        secondary_subject=f"{vendor}'s average invoice amount",
        secondary=Metric("average invoice", prefix="$"),
        secondary_base=rng.uniform(limit * 1.6, limit * 2.4),
        secondary_end=limit * rng.uniform(0.95, 0.99),
        volume_subject="total invoices processed",
        volume=Metric("invoices processed", "processed"),
        volume_base=rng.uniform(280, 420),
        volume_hypothesis="a general rise in invoice volume",
        peers=tuple(Peer(n, money, rng.uniform(20_000, 90_000), 0.03) for n in peer_vendors),
        onset_id=_id(rng, "POL"),
        onset_text=f"single-approver limit lowered from ${limit * 2.5:,.0f} to ${limit:,.0f}",
        herring_id=_id(rng, "ERP"),
        herring_text=f"ERP upgraded to release {rng.randint(10, 14)}.{rng.randint(1, 9)}",
        remedy=f"review all {vendor} invoices since the limit change for split purchases and "
               "route them to dual approval",
        correction_reason="a credit note was keyed as an invoice",
        staff=tuple(_pick(rng, _FIN_STAFF, 4)),
        notes=tuple(_FIN_NOTES),
        others=others,
    )


# -- support --------------------------------------------------------------------------------------
_SUP_STAFF = ["Team lead O. Diaz", "Agent B. Kaur", "Agent M. Fischer", "Agent Y. Sato",
              "QA lead R. Nwosu", "Agent E. Laine", "Duty manager G. Park"]
_SUP_NOTES = [
    "Macro for password resets updated with the new link.",
    "CSAT survey response rate 21% this week.",
    "Two agents finished onboarding and joined the queue.",
    "Knowledge-base article on invoices refreshed.",
    "Weekend coverage rota published.",
    "Escalation path to billing engineering confirmed.",
    "Spam filter blocked 140 messages.",
    "Chat widget uptime 100%.",
    "Tagging audit: 96% of tickets tagged correctly.",
    "Saved replies cleaned up; 18 retired.",
]


def support_cast(rng: random.Random) -> Cast:
    product = rng.choice(["Android app", "iOS app", "desktop client", "web dashboard"])
    feature = rng.choice(["sync-failure", "login-loop", "upload-error", "notification-missing"])
    categories = _pick(rng, ["billing", "password-reset", "export", "how-to", "refund",
                             "account-deletion", "feature-request"], 4)
    release = f"v{rng.randint(4, 7)}.{rng.randint(1, 9)}.0"
    others = tuple(
        OtherUnit(
            name=f"{line} support",
            peers=tuple(Peer(n, m, rng.uniform(lo, hi), 0.06) for n, m, lo, hi in [
                ("new tickets", Metric("new tickets", "new"), 80, 200),
                ("backlog", Metric("backlog", "open"), 40, 140),
                ("CSAT", Metric("CSAT", "%", 1), 84, 93)]),
            notes=tuple(rng.sample(_SUP_NOTES, 4)),
        )
        for line in ["Enterprise", "Partner", "Marketplace"]
    )
    return Cast(
        domain="support",
        org=f"{product} support",
        report="daily support digest",
        target=f"{feature} tickets",
        subject=f"the {product}'s daily {feature} tickets",
        primary=Metric(f"{feature}", "tickets"),
        primary_base=rng.uniform(10, 18),
        threshold=float(rng.choice([40, 45, 50])),
        threshold_name="escalation threshold",
        secondary_subject="median first response time",
        secondary=Metric("median first response", "min"),
        secondary_base=rng.uniform(25, 40),
        secondary_end=rng.uniform(130, 190),
        volume_subject="total tickets received",
        volume=Metric("total tickets", "received"),
        volume_base=rng.uniform(420, 640),
        volume_hypothesis="a general rise in ticket volume",
        # Other tags run well under the escalation threshold; only a one-off spike crosses it.
        peers=tuple(Peer(c, Metric(c, "tickets"), rng.uniform(6, 28), 0.15)
                    for c in categories),
        onset_id=_id(rng, "REL"),
        onset_text=f"{product} {release} released with aggressive battery optimisation",
        herring_id=_id(rng, "WEB"),
        herring_text="help-centre redesign went live",
        remedy=f"roll back the battery optimisation of {release} and add a {feature} "
               "macro for the queue",
        correction_reason="a bulk-tagging rule mislabelled one batch",
        staff=tuple(_pick(rng, _SUP_STAFF, 5)),
        notes=tuple(_SUP_NOTES),
        others=others,
    )


DOMAINS: dict[str, Callable[[random.Random], Cast]] = {
    "ops": ops_cast,
    "clinical": clinical_cast,
    "finance": finance_cast,
    "support": support_cast,
}
