// Whether the page is on a phone-sized screen: the layout (not the data)
// follows it. The same width as the components' `@media (max-width: 640px)`.
export const PHONE_QUERY = "(max-width: 640px)";

export class Viewport {
  phone = $state(false);
  #stop: (() => void) | null = null;

  constructor() {
    if (typeof window === "undefined" || typeof window.matchMedia !== "function") return;
    const mq = window.matchMedia(PHONE_QUERY);
    this.phone = mq.matches;
    const on = (e: MediaQueryListEvent) => (this.phone = e.matches);
    mq.addEventListener("change", on);
    this.#stop = () => mq.removeEventListener("change", on);
  }

  stop(): void {
    this.#stop?.();
  }
}
