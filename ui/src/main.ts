import { mount } from "svelte";
import "./app.css";
import App from "./App.svelte";
import WebRoot from "./WebRoot.svelte";
import { pickBackend, pickHosts } from "./lib/backend";

const target = document.getElementById("app");
if (!target) throw new Error("index.html has no #app element");
void Promise.all([pickBackend(), pickHosts()]).then(([backend, hostTransport]) =>
  // A browser must be paired first; the app's window and the demo need not.
  backend.link ? mount(WebRoot, { target, props: { backend, link: backend.link } }) : mount(App, { target, props: { backend, hostTransport } }),
);
