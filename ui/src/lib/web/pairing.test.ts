import { describe, expect, it } from "vitest";
import { codeFromUrl, linkNotice, pairingAdvice } from "./pairing";

const T = new Date(2026, 10, 27, 4, 12, 5).getTime();

describe("the pairing screen's words", () => {
  it("reads a code from the pairing URL's fragment only", () => {
    expect(codeFromUrl("#pair=abcd-efgh")).toBe("ABCD-EFGH");
    expect(codeFromUrl("#x=1&pair=WXYZ-1234")).toBe("WXYZ-1234");
    expect(codeFromUrl("")).toBe("");
    expect(codeFromUrl("#pair=<script>")).toBe("");
  });

  it("tells a wrong or expired code from a burned one and from this address's limit, and says what to do", () => {
    expect(pairingAdvice({ code: "unauthorized", message: "x" })).toMatch(/wrong or has expired.*new pairing/);
    expect(pairingAdvice({ code: "unauthorized", message: "that pairing code was burned: 20 wrong codes were typed" })).toMatch(/was burned.*Ask for a new code: it works at once/);
    expect(pairingAdvice({ code: "rate_limited", message: "x" })).toMatch(/from this network address.*Other devices can pair/);
    expect(pairingAdvice({ code: "internal", message: "disk full" })).toBe("Pairing failed: disk full");
  });
});

describe("the connection banner's words", () => {
  it("is silent while live, says since when and when the next try is while down", () => {
    expect(linkNotice({ status: "live", engine: "e" }, T)).toBeNull();
    const down = linkNotice({ status: "down", since: T, retryAt: T + 4_200, reason: "the connection was lost" }, T);
    expect(down).toBe("Not connected to the engine since 04:12:05 (the connection was lost). Nothing can be decided from this page until it reconnects; retrying in 5 s.");
    expect(linkNotice({ status: "down", since: T, retryAt: T, reason: "r" }, T + 10)).toMatch(/retrying now\.$/);
  });

  it("says when the engine restarted while it catches up", () => {
    expect(linkNotice({ status: "resyncing", engine: "e2", restarted: true }, T)).toMatch(/^Reconnected to the engine, which restarted/);
    expect(linkNotice({ status: "resyncing", engine: "e", restarted: false }, T)).toMatch(/^Reconnected: reading/);
  });
});
