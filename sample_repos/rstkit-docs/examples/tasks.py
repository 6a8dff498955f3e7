"""Example tasks used by the rstkit quickstart."""

import logging
from datetime import timedelta

import rstkit

log = logging.getLogger(__name__)

app = rstkit.App(
    broker="redis://localhost:6379/0",
    result_backend="redis://localhost:6379/1",
)


@app.task
def add(x: int, y: int) -> int:
    """Return the sum of two numbers; the classic first task."""
    return x + y


@app.task(max_retries=5, backoff=rstkit.Backoff(base=2.0, max_delay=300))
def fetch_exchange_rates(currency: str) -> dict:
    """Fetch rates from a partner API that is occasionally unavailable."""
    import urllib.request

    url = f"https://rates.example.test/latest?base={currency}"
    with urllib.request.urlopen(url, timeout=10) as response:
        return rstkit.json.loads(response.read())


@app.periodic(every=timedelta(minutes=15))
def refresh_rates() -> None:
    """Enqueue a fetch for every currency we display."""
    for currency in ("EUR", "USD", "JPY"):
        fetch_exchange_rates.enqueue(currency)
    log.info("queued rate refresh")
