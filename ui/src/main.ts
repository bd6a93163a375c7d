import { mount } from "svelte";
import "./app.css";
import App from "./App.svelte";
import { pickBackend } from "./lib/backend";

const target = document.getElementById("app");
if (!target) throw new Error("index.html has no #app element");
export default mount(App, { target, props: { backend: pickBackend() } });
