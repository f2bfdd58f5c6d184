"""Where an alert goes: Airflow connections -> the engine's senders (`foodtaster.ops.alerts`).

- email: the dataset's `smtp_conn_id` (default `smtp_default`), to `email_to`.
  Connection: `smtp://user:password@host:port?from_email=...` (extras `from_email`,
  `starttls` or the SMTP provider's `disable_tls=false` for STARTTLS).
- Slack: the dataset's `slack_conn_id` (default `slack_default`), an incoming
  webhook: the Slack provider's convention, host `https://hooks.slack.com/services`
  and the token `T000/B000/XXX` as password, or extra `webhook_url`.
- Every alert is also written as a file under the lake and logged; with neither
  connection defined that file is the only channel.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from foodtaster.registry import DatasetConfig

log = logging.getLogger(__name__)
DEFAULT_SENDER = "foodtaster@localhost"
SLACK_DEFAULT_HOST = "https://hooks.slack.com/services"


@dataclass
class Delivery:
    file: str
    email: list[str] = field(default_factory=list)  # recipients the SMTP server accepted
    slack: bool = False
    skipped: list[str] = field(default_factory=list)  # why a channel was not used

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "email": self.email, "slack": self.slack,
                "skipped": self.skipped}


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in {"1", "true", "yes", "on"}


def get_connection(conn_id: str) -> Any | None:
    """The connection, or None when it is not defined (any secrets backend, env or DB)."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None


def smtp_settings(conn: Any) -> dict[str, Any]:
    """send_email's keyword arguments from an SMTP connection."""
    extra = conn.extra_dejson or {}
    if "starttls" in extra:
        starttls = _truthy(extra["starttls"])
    else:
        starttls = "disable_tls" in extra and not _truthy(extra["disable_tls"])
    return {
        "host": conn.host or "localhost",
        "port": int(conn.port or 25),
        "sender": extra.get("from_email") or (conn.login if "@" in (conn.login or "") else None)
        or DEFAULT_SENDER,
        "login": conn.login or None,
        "password": conn.password or None,
        "starttls": starttls,
    }


def slack_webhook_url(conn: Any) -> str:
    """The incoming-webhook URL of a Slack webhook connection."""
    extra = conn.extra_dejson or {}
    if extra.get("webhook_url"):
        return extra["webhook_url"]
    host = conn.host or SLACK_DEFAULT_HOST
    if "://" not in host:
        scheme = conn.schema if conn.schema in ("http", "https") else "https"
        host = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
    token = (conn.password or "").strip("/")
    return host.rstrip("/") + (f"/{token}" if token else "")


def deliver(alert: Any, config: DatasetConfig, lake: Any) -> Delivery:
    """Write the alert under the lake, then send it on every configured channel.

    A channel that is configured but fails raises: the alert task retries it.
    """
    from foodtaster.ops import alerts

    path = alerts.write_alert_file(lake, alert)
    delivery = Delivery(file=str(path))
    log.info("alert written to %s", path)

    smtp = get_connection(config.alerts.smtp_conn_id)
    if smtp is None:
        delivery.skipped.append(f"email: no connection {config.alerts.smtp_conn_id!r}")
    elif not config.alerts.email_to:
        delivery.skipped.append("email: no recipients (alerts.email_to)")
    else:
        recipients = list(config.alerts.email_to)
        alerts.send_email(alert, recipients=recipients, **smtp_settings(smtp))
        delivery.email = recipients
        log.info("alert emailed to %s via %s", ", ".join(recipients), config.alerts.smtp_conn_id)

    slack = get_connection(config.alerts.slack_conn_id)
    if slack is None:
        delivery.skipped.append(f"slack: no connection {config.alerts.slack_conn_id!r}")
    else:
        alerts.send_slack(alert, slack_webhook_url(slack))
        delivery.slack = True
        log.info("alert posted to Slack via %s", config.alerts.slack_conn_id)

    if not delivery.email and not delivery.slack:
        log.warning(
            "no alert channel configured (%s); the alert is only in %s",
            "; ".join(delivery.skipped), path,
        )
    return delivery
