// Wires the page: tabs, the API key (kept in this browser only), the chat
// playground and the dashboard (which scrapes only while it is shown).
"use strict";
(function (ns) {
  const $ = (id) => document.getElementById(id);
  const key = $("api-key");
  key.value = localStorage.getItem("stride.apiKey") || "";

  const chat = new ns.ChatPlayground();
  const dashboard = new ns.Dashboard();
  ns.app = { chat, dashboard };

  key.addEventListener("change", () => {
    localStorage.setItem("stride.apiKey", key.value.trim());
    chat.loadModels();
  });

  function show(tab) {
    const isChat = tab === "chat";
    $("chat-view").hidden = !isChat;
    $("dashboard-view").hidden = isChat;
    $("tab-chat").classList.toggle("active", isChat);
    $("tab-dashboard").classList.toggle("active", !isChat);
    if (isChat) dashboard.stop();
    else dashboard.start();
    location.hash = tab;
  }
  $("tab-chat").addEventListener("click", () => show("chat"));
  $("tab-dashboard").addEventListener("click", () => show("dashboard"));
  show(location.hash === "#dashboard" ? "dashboard" : "chat");
  chat.loadModels();
})(window.stride);
