"""Where an alert goes, and the sending, over Airflow connections (the SMTP provider's
conventions, the Slack provider's hook); the engine (`foodtaster.ops.alerts`) only builds
the messages.

- email: the dataset's `smtp_conn_id` (default `smtp_default`), to `email_to`, by
  `smtplib` on the SMTP provider's connection conventions (`smtp_client`): extra
  `from_email`; SSL unless `disable_ssl=true` and STARTTLS unless `disable_tls=true`
  (a local mail catcher wants both), `timeout`, `retry_limit`, `ssl_context`. The
  provider's `SmtpHook` sends only the HTML-only messages it builds itself and keeps
  its client private; the alert is the engine's own multipart email.
- Slack: the dataset's `slack_conn_id` (default `slack_default`), an incoming webhook
  through the Slack provider's `SlackWebhookHook`: host `https://hooks.slack.com/services`
  and the token `T000/B000/XXX` as password (or the whole webhook URL as password).
  The message is Slack Block Kit: a header and mrkdwn sections.
- Every alert is also written as a file under the lake and logged; with neither
  connection defined that file is the only channel.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
import urllib.parse
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from foodtaster.registry import DatasetConfig

log = logging.getLogger(__name__)
DEFAULT_SENDER = "foodtaster@localhost"
DEFAULT_BASE_URL = "http://localhost:8080/"  # Airflow's own fallback for [api] base_url


@dataclass
class Delivery:
    file: str
    email: list[str] = field(default_factory=list)  # recipients the SMTP server accepted
    slack: bool = False
    skipped: list[str] = field(default_factory=list)  # why a channel was not used

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "email": self.email, "slack": self.slack,
                "skipped": self.skipped}


def log_delivery(dataset: str, batch_id: str, event: str, delivery: Delivery, lake: Any) -> None:
    """Where an alert went, as one key=value log line: the file relative to the lake."""
    from foodtaster.logs import batch_logger
    from foodtaster.ops.shown import in_lake

    batch_logger(__name__, dataset, batch_id).event(
        event, file=in_lake(lake.root, delivery.file), email=delivery.email or "none",
        slack=delivery.slack, skipped=delivery.skipped or "none")


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
    """What the SMTP provider's hook makes of a connection (its conventions, which
    `smtp_client` follows and logs and errors name): host, port, sender, login, SSL, STARTTLS."""
    extra = conn.extra_dejson or {}
    return {
        "host": conn.host or "localhost",
        "port": int(conn.port or 25),
        "sender": extra.get("from_email") or (conn.login if "@" in (conn.login or "") else None)
        or DEFAULT_SENDER,
        "login": conn.login or None,
        "ssl": not _truthy(extra.get("disable_ssl", False)),
        "starttls": not _truthy(extra.get("disable_tls", False)),
    }


def run_url(dag_id: str, run_id: str) -> str:
    """The run's page in the Airflow UI, from Airflow's own `[api] base_url` (as Airflow
    builds its task log links)."""
    from airflow.configuration import conf

    base = conf.get("api", "base_url", fallback=None) or DEFAULT_BASE_URL
    return f"{base.rstrip('/')}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"


def smtp_client(conn: Any) -> smtplib.SMTP:
    """A client connected to the connection's server and logged in, as the SMTP provider's
    hook would be: SSL or plain, then STARTTLS, then the login when there is one."""
    settings = smtp_settings(conn)
    extra = conn.extra_dejson or {}
    context = None if extra.get("ssl_context") == "none" else ssl.create_default_context()
    where: dict[str, Any] = {"host": settings["host"], "timeout": int(extra.get("timeout", 30))}
    if conn.port:
        where["port"] = int(conn.port)
    attempts = int(extra.get("retry_limit", 5)) + 1
    for attempt in range(1, attempts + 1):
        try:
            client = (smtplib.SMTP_SSL(context=context, **where) if settings["ssl"]
                      else smtplib.SMTP(**where))
            break
        except smtplib.SMTPServerDisconnected:
            if attempt == attempts:
                raise
    if settings["starttls"]:
        client.starttls(context=context)
        client.ehlo()
    if conn.login and conn.password:
        client.login(conn.login, conn.password)
    return client


def send_email(alert: Any, recipients: list[str], conn_id: str = "smtp_default") -> None:
    """Send the alert's email (text, HTML and its inline chart) through the connection."""
    from foodtaster.logs import batch_logger
    from foodtaster.ops.alerts import AlertDeliveryError, email_message

    conn = get_connection(conn_id)
    if conn is None:
        raise AlertDeliveryError(f"{alert.kind} alert for {alert.dataset}: no connection "
                                 f"{conn_id!r}")
    settings = smtp_settings(conn)
    message = email_message(alert, settings["sender"], recipients)
    try:
        with smtp_client(conn) as client:
            client.send_message(message, from_addr=settings["sender"], to_addrs=recipients)
    except (smtplib.SMTPException, OSError) as err:
        raise AlertDeliveryError(
            f"{alert.kind} alert for {alert.dataset} batch {alert.batch_id}: "
            f"email via {settings['host']}:{settings['port']} ({conn_id}) failed: {err}"
        ) from err
    batch_logger(__name__, alert.dataset, alert.batch_id).event(
        "alert_sent", channel="email", kind=alert.kind, severity=alert.severity,
        recipients=len(recipients), images=len(alert.images),
    )


def send_slack(alert: Any, conn_id: str = "slack_default") -> None:
    """Post the alert's Block Kit payload through `SlackWebhookHook`; any non-2xx answer raises.

    Errors name the webhook's host only: the URL's path is its secret.
    """
    from airflow.providers.slack.hooks.slack_webhook import SlackWebhookHook

    from foodtaster.logs import batch_logger
    from foodtaster.ops.alerts import AlertDeliveryError

    client = SlackWebhookHook(slack_webhook_conn_id=conn_id).client
    parts = urllib.parse.urlsplit(client.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the Slack webhook of {conn_id!r} must be an http(s) URL")
    where = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    what = f"{alert.kind} alert for {alert.dataset} batch {alert.batch_id}: Slack webhook at {where}"
    try:
        response = client.send_dict(alert.slack_payload())
    except OSError as err:  # URLError, timeouts, refused connections
        raise AlertDeliveryError(f"{what} unreachable: {err}") from None
    if not 200 <= response.status_code < 300:
        raise AlertDeliveryError(f"{what} answered HTTP {response.status_code}: "
                                 f"{str(response.body)[:300]}")
    batch_logger(__name__, alert.dataset, alert.batch_id).event(
        "alert_sent", channel="slack", kind=alert.kind, severity=alert.severity, webhook=where,
    )


def deliver(alert: Any, config: DatasetConfig, lake: Any) -> Delivery:
    """Write the alert under the lake, then send it on every configured channel.

    A channel that is configured but fails raises: the alert task retries it.
    """
    from foodtaster.ops import alerts
    from foodtaster.ops.shown import in_lake

    path = alerts.write_alert_file(lake, alert)
    delivery = Delivery(file=str(path))
    log.info("alert written to %s (in the lake)", in_lake(lake.root, path))

    smtp = get_connection(config.alerts.smtp_conn_id)
    if smtp is None:
        delivery.skipped.append(f"email: no connection {config.alerts.smtp_conn_id!r}")
    elif not config.alerts.email_to:
        delivery.skipped.append("email: no recipients (alerts.email_to)")
    else:
        recipients = list(config.alerts.email_to)
        send_email(alert, recipients, config.alerts.smtp_conn_id)
        delivery.email = recipients
        log.info("alert emailed to %s via %s", ", ".join(recipients), config.alerts.smtp_conn_id)

    slack = get_connection(config.alerts.slack_conn_id)
    if slack is None:
        delivery.skipped.append(f"slack: no connection {config.alerts.slack_conn_id!r}")
    else:
        send_slack(alert, config.alerts.slack_conn_id)
        delivery.slack = True
        log.info("alert posted to Slack via %s", config.alerts.slack_conn_id)

    if not delivery.email and not delivery.slack:
        log.warning(
            "no alert channel configured (%s); the alert is only in %s (in the lake)",
            "; ".join(delivery.skipped), in_lake(lake.root, path),
        )
    return delivery
