"""The API's settings: the core's `Settings` plus what only the server and the bots need (KB_*)."""

from __future__ import annotations

from kb.config import Settings


class ApiSettings(Settings):
    """One object for the whole server: the core reads the `Settings` part of it."""

    admin_token: str | None = None
    max_body_bytes: int = 2 * 1024 * 1024
    request_timeout_s: float = 30.0
    search_processes: int = 1
    """Processes that run searches (KB_SEARCH_PROCESSES; `kb serve --workers N` sets it). 1: one thread in
    the server's own process; 2 or more: a pool fed from one queue, one process per core."""
    public_url: str = ""
    """Base URL users reach the web page at, for links in bot answers (e.g. https://kb.example.com)."""

    # Chat-ops bots: each is off (404) until its secrets are set.
    slack_signing_secret: str | None = None
    slack_bot_token: str | None = None
    slack_api_base: str = "https://slack.com/api"
    mattermost_token: str | None = None
    dingtalk_app_secret: str | None = None
    feishu_app_id: str | None = None
    feishu_app_secret: str | None = None
    feishu_verification_token: str | None = None
    feishu_encrypt_key: str | None = None
    feishu_api_base: str = "https://open.feishu.cn/open-apis"
    wecom_corp_id: str | None = None
    wecom_token: str | None = None
    wecom_aes_key: str | None = None
    wecom_secret: str | None = None
    wecom_agent_id: str | None = None
    wecom_api_base: str = "https://qyapi.weixin.qq.com/cgi-bin"
