import { describe, expect, it } from "vitest";
import { LiveCollection, LiveValue } from "./live.svelte";
import type { EngineEvent } from "./types";

/** A backend's subscribe, with a push of its own. */
function engine() {
  const listeners = new Set<(e: EngineEvent) => void>();
  let subscribes = 0;
  return {
    get listeners() {
      return listeners.size;
    },
    get subscribes() {
      return subscribes;
    },
    async subscribe(f: (e: EngineEvent) => void) {
      subscribes += 1;
      listeners.add(f);
      return () => void listeners.delete(f);
    },
    push(e: EngineEvent) {
      for (const l of listeners) l(e);
    },
  };
}

interface Item {
  id: number;
  text: string;
}
const changed = (id: number, text = `t${id}`): EngineEvent => ({ type: "workspace_changed", name: JSON.stringify({ id, text }) });
const gone = (id: number): EngineEvent => ({ type: "task_changed", task_id: id });
/** Test events: a workspace_changed carries an item, a task_changed removes one. */
function change(e: EngineEvent) {
  if (e.type === "workspace_changed") return { put: [JSON.parse(e.name) as Item] };
  if (e.type === "task_changed") return { remove: [e.task_id] };
  return null;
}
const flush = () => new Promise((r) => setTimeout(r, 0));

describe("LiveCollection", () => {
  it("subscribes before it loads, and applies what came during the load after it, in order", async () => {
    const e = engine();
    const live = new LiveCollection<number, Item>(e, {
      key: (i) => i.id,
      load: async () => {
        // The engine changes while the list is on its way.
        expect(e.listeners).toBe(1);
        e.push(changed(3));
        e.push(gone(1));
        e.push(changed(2, "newer"));
        return [
          { id: 1, text: "t1" },
          { id: 2, text: "t2" },
        ];
      },
      change,
      order: (a, b) => a.id - b.id,
    });
    expect(live.ready).toBe(false);
    await live.start();
    expect(live.ready).toBe(true);
    expect(live.list).toEqual([
      { id: 2, text: "newer" },
      { id: 3, text: "t3" },
    ]);
    // Afterwards an event shows at once, in its place by the order.
    e.push(changed(0));
    expect(live.list.map((i) => i.id)).toEqual([0, 2, 3]);
    // A later copy replaces the earlier one; nothing is duplicated.
    e.push(changed(3, "again"));
    expect(live.list.map((i) => i.text)).toEqual(["t0", "newer", "again"]);
    live.stop();
    e.push(changed(9));
    expect(live.items.has(9)).toBe(false);
    expect(e.listeners).toBe(0);
  });

  it("keeps a failed load's error and drops what came meanwhile; a reload keeps what events put in", async () => {
    const e = engine();
    let fail = true;
    const live = new LiveCollection<number, Item>(e, {
      key: (i) => i.id,
      load: async () => {
        if (fail) {
          e.push(changed(5));
          throw { code: "internal", message: "database is locked" };
        }
        return [{ id: 1, text: "t1" }];
      },
      change,
    });
    await live.start();
    expect(live.ready).toBe(true);
    expect(live.error).toEqual({ code: "internal", message: "database is locked" });
    expect(live.items.size).toBe(0);
    e.push(changed(7));
    fail = false;
    expect(await live.load()).toBe(true);
    expect(live.error).toBeNull();
    expect([...live.items.keys()].sort()).toEqual([1, 7]);
  });

  it("applies a change that asks the engine first, and tells each change", async () => {
    const e = engine();
    const seen: [number | undefined, number | undefined][] = [];
    const live = new LiveCollection<number, Item>(e, {
      key: (i) => i.id,
      load: async () => [],
      change: async (ev) => change(ev),
      changed: (prev, next) => seen.push([prev?.id, next?.id]),
    });
    await live.start();
    e.push(changed(4));
    await flush();
    e.push(gone(4));
    await flush();
    expect(seen).toEqual([
      [undefined, 4],
      [4, undefined],
    ]);
  });

  it("never subscribes for good when stopped while subscribing", async () => {
    const e = engine();
    const live = new LiveCollection<number, Item>(e, { key: (i) => i.id, load: async () => [], change });
    const started = live.start();
    live.stop();
    await started;
    expect(e.subscribes).toBe(1);
    expect(e.listeners).toBe(0);
  });
});

describe("LiveValue", () => {
  it("asks once, then again on each event that touches it; an older answer arriving late never wins", async () => {
    const e = engine();
    const answers: ((v: string) => void)[] = [];
    const live = new LiveValue<string>(e, {
      fetch: () => new Promise<string>((r) => answers.push(r)),
      touches: (ev) => ev.type === "task_changed",
    });
    const started = live.start();
    await flush();
    answers[0]!("first");
    await started;
    expect(live.value).toBe("first");
    e.push(changed(1)); // does not touch it
    e.push(gone(1));
    e.push(gone(1));
    expect(answers).toHaveLength(3);
    answers[2]!("newest");
    await flush();
    answers[1]!("stale");
    await flush();
    expect(live.value).toBe("newest");
    expect(live.loading).toBe(false);
  });

  it("one question at a time: events during a load ask exactly once more after it", async () => {
    const e = engine();
    const answers: ((v: number) => void)[] = [];
    const live = new LiveValue<number>(e, {
      fetch: () => new Promise<number>((r) => answers.push(r)),
      touches: () => true,
      oneAtATime: true,
    });
    await live.listen();
    void live.refetch();
    e.push(gone(1));
    e.push(gone(2));
    expect(answers).toHaveLength(1);
    answers[0]!(1);
    await flush();
    expect(answers).toHaveLength(2);
    answers[1]!(2);
    await flush();
    expect(live.value).toBe(2);
    expect(answers).toHaveLength(2);
  });
});

/** A link that resyncs when the test says (as a reconnection would). */
function link() {
  const resyncers = new Set<() => Promise<unknown>>();
  return {
    state: { status: "live" as const, engine: "e" },
    onState: () => () => {},
    retryNow: () => {},
    onResync(f: () => Promise<unknown>) {
      resyncers.add(f);
      return () => void resyncers.delete(f);
    },
    get resyncers() {
      return resyncers.size;
    },
    resync: () => Promise.allSettled([...resyncers].map((f) => f())),
  };
}

describe("resync after a reconnection", () => {
  it("a reload replaces every item (one removed while events were missed goes), holding the events of its time", async () => {
    const e = engine();
    const l = link();
    let truth: Item[] = [{ id: 1, text: "a" }, { id: 2, text: "b" }];
    let during: (() => void) | null = null;
    const live = new LiveCollection<number, Item>({ ...e, link: l }, {
      key: (i) => i.id,
      load: async () => {
        const answer = truth.map((i) => ({ ...i }));
        during?.();
        return answer;
      },
      change,
      order: (a, b) => a.id - b.id,
    });
    await live.start();
    expect(l.resyncers).toBe(1);
    // Missed while disconnected: 1 went, 3 came.
    truth = [{ id: 2, text: "b" }, { id: 3, text: "c" }];
    // During the reread, 4 comes over the new connection.
    during = () => e.push(changed(4, "d"));
    await l.resync();
    expect(live.list.map((i) => i.id)).toEqual([2, 3, 4]);
    live.stop();
    expect(l.resyncers).toBe(0);
  });

  it("a reload that starts during the first load wins, and the events held for both apply once", async () => {
    const e = engine();
    const l = link();
    const answers: Array<(items: Item[]) => void> = [];
    const live = new LiveCollection<number, Item>({ ...e, link: l }, {
      key: (i) => i.id,
      load: () => new Promise<Item[]>((resolve) => answers.push(resolve)),
      change,
      order: (a, b) => a.id - b.id,
    });
    const started = live.start();
    await flush();
    const resynced = l.resync();
    await flush();
    expect(answers).toHaveLength(2);
    e.push(changed(9, "held"));
    // The newer reread answers first; the first load's older answer comes last.
    answers[1]!([{ id: 2, text: "new" }]);
    await flush();
    answers[0]!([{ id: 1, text: "old" }]);
    await Promise.all([started, resynced]);
    expect(live.list).toEqual([{ id: 2, text: "new" }, { id: 9, text: "held" }]);
    expect(live.error).toBeNull();
  });

  it("a live value asks again", async () => {
    const e = engine();
    const l = link();
    let asked = 0;
    const v = new LiveValue({ ...e, link: l }, { fetch: async () => ++asked, touches: () => false });
    await v.start();
    expect(v.value).toBe(1);
    await l.resync();
    expect(v.value).toBe(2);
  });
});
