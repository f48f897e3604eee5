"""What every browser walk watches besides its own subject: the Content-Security-Policy
and requests to other hosts.

Chromium reports each CSP violation twice: a console message ("... violates the following
Content Security Policy directive ...") and a securitypolicyviolation event, which an init
script (run by Playwright outside the page's policy) records. Both must stay empty, and no
request may leave for another host.
"""

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(event.violatedDirective + " " + event.blockedURI);
});
"""


class PolicyWatch:
    """Installed on a context before its first page: records violations and requests to
    any host but the live server's. It listens and does not route: routing turns off the
    browser's cache, and this machine has no route out anyway."""

    def __init__(self, context, base: str) -> None:
        self.base = base
        self.console: list[str] = []
        self.elsewhere: list[str] = []
        context.add_init_script(RECORD_VIOLATIONS)
        context.on("request", self._on_request)

    def watch(self, page) -> None:
        page.on("console", lambda message: self._on_console(page, message))

    def _on_request(self, request) -> None:
        if request.url.startswith(("http:", "https:", "ws:", "wss:")) \
                and not request.url.startswith(self.base):
            self.elsewhere.append(request.url)

    def _on_console(self, page, message) -> None:
        if "Content Security Policy" in message.text:
            self.console.append(f"{page.url}: {message.text}")

    @staticmethod
    def header_problems(response, where: str) -> list[str]:
        policy = response.headers.get("content-security-policy", "")
        if "script-src 'self'" in policy and "style-src 'self'" in policy:
            return []
        return [f"{where}: no strict Content-Security-Policy ({policy!r})"]

    def problems(self, page, where: str) -> list[str]:
        """Violations recorded on the page so far, and console reports and requests
        elsewhere since the last call (each reported once)."""
        found = [f"{where}: {item}" for item in page.evaluate("window.__cspViolations || []")]
        found += self.console + [f"{where}: request to {url}" for url in self.elsewhere]
        self.console.clear()
        self.elsewhere.clear()
        return found
