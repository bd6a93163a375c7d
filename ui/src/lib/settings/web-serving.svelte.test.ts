// Serving browsers, as Settings shows it: the engine's status, a switch that
// answers with where it serves, a refusal named by its field, and a change
// made elsewhere (the CLI, another window) arriving as an event.
import { describe, expect, it } from "vitest";
import { MockBackend } from "../backend/mock";
import { WebServing, parseOrigins } from "./web-serving.svelte";

const flush = () => new Promise((r) => setTimeout(r, 0));

describe("serving browsers in Settings", () => {
  it("switches on, shows the URL, and names the field of a refusal", async () => {
    const backend = new MockBackend();
    const web = new WebServing(backend);
    await web.start();
    expect(web.status?.serving).toBe(false);
    const on = await web.save({ ...web.status!.settings, enabled: true, addr: "127.0.0.1:9100" });
    expect(on?.url).toBe("http://127.0.0.1:9100");
    expect(web.status?.url).toBe("http://127.0.0.1:9100");
    const refused = await web.save({ ...web.status!.settings, addr: "0.0.0.0:9100" });
    expect(refused).toBeNull();
    expect(web.error?.code).toBe("invalid_input");
    expect(web.error?.fields?.[0]?.field).toBe("addr");
    // The refused setting changed nothing.
    expect(web.status?.url).toBe("http://127.0.0.1:9100");
    web.stop();
  });

  it("follows a change made elsewhere through the engine's event", async () => {
    const backend = new MockBackend();
    const web = new WebServing(backend);
    await web.start();
    await backend.setWebServing({ ...web.status!.settings, enabled: true, addr: "127.0.0.1:9200" });
    await flush();
    await flush();
    expect(web.status?.url).toBe("http://127.0.0.1:9200");
    web.stop();
  });

  it("reads public origins one per line or comma-separated", () => {
    expect(parseOrigins(" https://a.example \n\nhttps://b.example, https://c.example")).toEqual([
      "https://a.example",
      "https://b.example",
      "https://c.example",
    ]);
  });
});
