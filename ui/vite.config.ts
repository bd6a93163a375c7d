import { defineConfig } from "vitest/config";
import { svelte } from "@sveltejs/vite-plugin-svelte";

// The window runs under a strict CSP (no inline script or style): component
// styles are emitted as CSS files, never injected.
export default defineConfig({
  plugins: [svelte({ emitCss: true })],
  clearScreen: false,
  server: { port: 1420, strictPort: true },
  build: { outDir: "dist", target: "es2022", emptyOutDir: true },
  test: { include: ["src/**/*.test.ts"], environment: "node" },
});
