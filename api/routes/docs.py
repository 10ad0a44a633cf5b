"""/docs: Swagger UI from the `swagger-ui-bundle` package's files, so it works offline.

FastAPI's default page loads Swagger UI from a CDN (blank without internet) and starts it
with an inline script, which a strict Content-Security-Policy forbids. Here the assets and
the small start-up script are served from this server.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, Response
from swagger_ui_bundle import swagger_ui_path

router = APIRouter(include_in_schema=False)

ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kb API</title>
<link rel="icon" href="/docs/assets/favicon-32x32.png"><link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head><body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script><script src="/docs/start.js"></script>
</body></html>"""
START = 'window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true});\n'


@router.get("/docs")
def docs_page() -> HTMLResponse:
    return HTMLResponse(PAGE, headers={"Content-Security-Policy": CSP, "Cache-Control": "no-cache"})


@router.get("/docs/start.js")
def docs_start() -> Response:
    return Response(START, media_type="text/javascript; charset=utf-8")


@router.get("/docs/assets/{name}")
def docs_asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise HTTPException(404, "no such file")
    return FileResponse(Path(str(swagger_ui_path)) / name, media_type=ASSETS[name],
                        headers={"Cache-Control": "public, max-age=86400"})
