// The app's hosts, as its Tauri commands and events carry them: the types
// generated from the Rust side's declaration (../generated/types.ts).
export type { HostEvent, HostLinkState, HostLinkView, HostRemoved, HostSetupStep } from "../generated/types";
