// Settings -> Hosts, "Add a host": what the form holds and shows. Its own
// checks run before anything is sent (nothing is sent while one fails); the
// app's refusal is shown as it returned it; the steps shown are the app's,
// for the host being added (Hosts.setups).
import type { ApiError, FieldError } from "../types";
import type { Hosts } from "./hosts.svelte";
import { hostFormProblems } from "./setup";

export class HostAddForm {
  name = $state("");
  url = $state("");
  /** An ssh config file to use instead of ~/.ssh/config ("": the user's). */
  sshConfig = $state("");
  /** What the form's own checks found; nothing was sent. */
  problems = $state.raw<readonly FieldError[]>([]);
  /** The app's refusal of the last add, as it returned it. */
  error = $state.raw<ApiError | null>(null);
  /** The host of the last add sent: whose steps the form shows. */
  adding = $state<string | null>(null);

  constructor(private hosts: Hosts) {}

  /** True while the app adds the host. */
  get running(): boolean {
    return this.adding !== null && this.hosts.busy(this.adding);
  }

  /** The user typed: what the checks said of the last try is stale. */
  edited(): void {
    if (this.problems.length > 0) this.problems = [];
  }

  /** Checks the form, then asks the app to add the host. True once added. */
  async submit(): Promise<boolean> {
    if (this.running) return false;
    const name = this.name.trim();
    const url = this.url.trim();
    const sshConfig = this.sshConfig.trim();
    this.problems = [
      ...hostFormProblems(
        name,
        url,
        this.hosts.list.map((h) => h.name),
      ),
      ...(sshConfig !== "" && !sshConfig.startsWith("/")
        ? [{ field: "ssh_config", message: `“${sshConfig}” is not an absolute path: give the ssh config file's whole path, starting with /, or leave it empty for ~/.ssh/config.` }]
        : []),
    ];
    if (this.problems.length > 0) {
      this.error = null;
      return false;
    }
    this.adding = name;
    this.error = null;
    const refused = await this.hosts.add(name, url, sshConfig === "" ? null : sshConfig);
    this.error = refused;
    if (refused) return false;
    this.name = "";
    this.url = "";
    this.sshConfig = "";
    return true;
  }
}
