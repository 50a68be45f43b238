"""The Deployment dock: pick a deployment, see its dry-run plan, settle conflicts, apply.

Every scan and transfer runs as a job keyed ``host:NAME``, so the window never waits and jobs
against one host run one at a time. Nothing is copied before the user has seen the plan.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QHBoxLayout, QHeaderView, QLabel,
                               QListWidget, QListWidgetItem, QMessageBox, QProgressBar, QPushButton, QSplitter,
                               QStackedWidget, QTableView, QVBoxLayout, QWidget)

from studio.core.errors import StudioError
from studio.core.formats import Detected
from studio.tools.deploy.deployments import Deployment, DeploymentStore
from studio.tools.deploy.plan import CONFLICT, Plan
from studio.ui import style
from studio.ui.panels.base import Panel
from studio.ui.panels.deploy.plan_model import COLUMNS, PlanModel
from studio.ui.panels.deploy.state import (EMPTY_TEXT, MODES, NO_DEPLOYMENTS, NO_PLAN, actionable, deployment_for,
                                           has_conflict, header_text)
from studio.ui.panels.deploy.syncing import Syncing
from studio.ui.widgets.empty_state import EmptyState
from studio.ui.widgets.tool_row import ToolRow


class DeployPanel(Syncing, Panel):
    """Deployments on the left; the selected one's plan, progress and actions on the right."""

    NAME = "deploy"
    TITLE = "Deployment"

    def __init__(self, runner, parent: QWidget | None = None, links=None):
        super().__init__(runner, parent, links)

        self.store: DeploymentStore | None = None
        self.plan: Plan | None = None
        self.last_result = None
        self._handle = None
        self._build()
        self.reload()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.deployment_list = QListWidget(self)
        self.deployment_list.currentItemChanged.connect(self._on_selection_changed)
        add, self.remove_button = QPushButton("Add…", self), QPushButton("Remove", self)
        add.clicked.connect(self._on_add)
        self.remove_button.clicked.connect(self._on_remove)
        left = QWidget(self)
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(QLabel("<b>Deployments</b>", left))
        left_layout.addWidget(self.deployment_list, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(self.remove_button)
        left_layout.addLayout(buttons)

        self.header = QLabel(self)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.header.setWordWrap(True)
        self.mode = QComboBox(self)
        for key, label in MODES:
            self.mode.addItem(label, key)
        self.delete = QCheckBox("Propagate deletions", self)
        self.delete.setToolTip("Also delete files deleted on the other side. They are listed in the plan first.")
        self.checksum = QCheckBox("Checksums", self)
        self.checksum.setToolTip("Compare SHA-256 of equal-sized files instead of trusting size and time.")
        for widget in (self.mode, self.delete, self.checksum):
            signal = widget.currentIndexChanged if widget is self.mode else widget.toggled
            signal.connect(self._on_options_changed)
        self.dry_run_button = QPushButton("Dry run", self)
        self.apply_button = QPushButton("Apply", self)
        self.cancel_button = QPushButton("Cancel", self)
        self.dry_run_button.clicked.connect(self.dry_run)
        self.apply_button.clicked.connect(self.apply)
        self.cancel_button.clicked.connect(self._on_cancel)
        self.diff_button = QPushButton("Diff…", self)
        self.diff_button.setToolTip("Text differences between the local and remote copies of the selected file")
        self.diff_button.clicked.connect(self.show_diff)
        controls = ToolRow(self, "deploy")  # the actions first: the options go under "More" when narrow
        for widget in (self.dry_run_button, self.apply_button, self.cancel_button, self.mode, self.delete,
                       self.checksum):
            controls.addWidget(widget)
        self.last_diff: str | None = None

        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.model = PlanModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # full text is in the tooltip
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for column, width in zip(range(len(COLUMNS)), (150, 320, 80)):
            self.table.setColumnWidth(column, width)
        self.table.selectionModel().selectionChanged.connect(self._update_buttons)
        self.placeholder = QLabel(NO_PLAN, self)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.placeholder.setWordWrap(True)
        self.placeholder.setContentsMargins(16, 24, 16, 16)
        self.placeholder.setStyleSheet("color: palette(placeholder-text);")
        self.stack = QStackedWidget(self)
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(self.table)

        self.keep_local = QPushButton("Keep local", self)
        self.keep_remote = QPushButton("Keep remote", self)
        self.leave_both = QPushButton("Leave both", self)
        for button, choice in ((self.keep_local, "local"), (self.keep_remote, "remote"), (self.leave_both, "skip")):
            button.setToolTip(f"For the selected conflicts: {button.text().lower()}")
            button.clicked.connect(lambda _=False, c=choice: self.choose(c))
        self.choices = QWidget(self)
        choices = QHBoxLayout(self.choices)
        choices.setContentsMargins(0, 0, 0, 0)
        choices.addWidget(QLabel("Selected conflicts:", self.choices))
        for button in (self.keep_local, self.keep_remote, self.leave_both):
            choices.addWidget(button)
        choices.addStretch(1)

        self.progress = QProgressBar(self)
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(10)
        self.progress.hide()  # shown while a job runs
        self.progress_label = QLabel(self)
        self.progress_label.setMinimumWidth(50)

        right = QWidget(self)
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.header)
        right_layout.addWidget(controls)
        right_layout.addWidget(self.summary)
        right_layout.addWidget(self.stack, 1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.choices, 1)
        bottom.addWidget(self.diff_button)
        right_layout.addLayout(bottom)
        right_layout.addWidget(self.progress)
        right_layout.addWidget(self.progress_label)

        self.empty = EmptyState("No deployment yet", EMPTY_TEXT, self)
        self.empty.add_action("Add a deployment…", self._on_add)
        splitter = self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([200, 700])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.empty, 1)
        layout.addWidget(splitter, 1)

    # ------------------------------------------------------------------ deployments
    def reload(self) -> None:
        """Read deployments.toml again and list it (keeps the selection when it still exists)."""
        current = self.current_deployment()
        try:
            self.store = DeploymentStore()
        except StudioError as exc:
            self.store = None
            self.summary.setText(f"<span style='color:{style.ERROR}'>{exc}</span>")
        self.deployment_list.clear()
        for name, deployment in sorted((self.store.deployments if self.store else {}).items()):
            item = QListWidgetItem(name)
            item.setToolTip(f"{deployment.local}\n↔ {deployment.host}:{deployment.remote}")
            item.setData(Qt.ItemDataRole.UserRole, name)
            self.deployment_list.addItem(item)
            if current and current.name == name:
                self.deployment_list.setCurrentItem(item)
        if self.deployment_list.currentItem() is None and self.deployment_list.count():
            self.deployment_list.setCurrentRow(0)
        self._show_deployment()

    def current_deployment(self) -> Deployment | None:
        item = self.deployment_list.currentItem() if hasattr(self, "deployment_list") else None
        if item is None or self.store is None:
            return None
        return self.store.deployments.get(item.data(Qt.ItemDataRole.UserRole))

    def select(self, name: str) -> None:
        for row in range(self.deployment_list.count()):
            if self.deployment_list.item(row).data(Qt.ItemDataRole.UserRole) == name:
                self.deployment_list.setCurrentRow(row)

    def _on_selection_changed(self, *_args) -> None:
        self._show_deployment()

    def _show_deployment(self) -> None:
        deployment = self.current_deployment()
        listed = self.deployment_list.count() > 0 or self.store is None  # a broken file shows its error
        self.splitter.setVisible(listed)
        self.empty.setVisible(not listed)
        self._set_plan(None)
        if deployment is None:
            self.header.setText("")
            self.placeholder.setText(NO_DEPLOYMENTS)
        else:
            self.header.setText(header_text(deployment))
            self.header.setToolTip(self.header.text())
            self.placeholder.setText(NO_PLAN)
        self._update_buttons()

    def _on_add(self) -> None:
        from studio.ui.panels.deploy.add_dialog import AddDeploymentDialog

        try:
            self.host_context.reload()
            hosts = self.host_context.names()
        except StudioError:
            hosts = []
        dialog = AddDeploymentDialog(hosts, parent=self, add_host=self._add_host)
        if dialog.exec() and dialog.deployment is not None and self.store is not None:
            self.store.put(dialog.deployment)
            self.store.save()
            self.reload()
            self.select(dialog.deployment.name)

    def _add_host(self) -> list[str]:
        """Ask the Hosts panel's "Add host" dialog for a host; the host names afterwards."""
        self.links.add_host.emit()
        try:
            self.host_context.reload()
            return self.host_context.names()
        except StudioError:
            return []

    def _on_remove(self) -> None:
        deployment = self.current_deployment()
        if deployment is None or self.store is None:
            return
        answer = QMessageBox.question(self, "Remove deployment",
                                      f"Forget deployment {deployment.name}? No file is deleted on either side.")
        if answer == QMessageBox.StandardButton.Yes:
            self.store.remove(deployment.name)
            self.store.save()
            self.reload()

    # ------------------------------------------------------------------ plan and apply
    def _on_options_changed(self, *_args) -> None:
        if self.plan is not None:
            self._set_plan(None)
            self.summary.setText("Options changed: run the dry run again.")

    def _set_plan(self, plan: Plan | None) -> None:
        self.plan = plan
        self.model.set_plan(plan)
        self.stack.setCurrentWidget(self.table if plan is not None and plan.items else self.placeholder)
        if plan is None:
            self.summary.setText("")
        elif not plan.items:
            self.placeholder.setText(f"Both sides are in sync ({plan.unchanged} files unchanged).")
        self._update_buttons()

    def _update_buttons(self, *_args) -> None:
        busy, deployment = self._busy(), self.current_deployment()
        self.dry_run_button.setEnabled(deployment is not None and not busy)
        for widget in (self.mode, self.delete, self.checksum):
            widget.setEnabled(deployment is not None and not busy)
        self.apply_button.setEnabled(self.plan is not None and not busy and actionable(self.plan))
        self.cancel_button.setEnabled(busy)
        self.remove_button.setEnabled(deployment is not None and not busy)
        rows = {index.row() for index in self.table.selectionModel().selectedRows()} if self.plan else set()
        conflict = has_conflict(self.plan, rows)
        for button in (self.keep_local, self.keep_remote, self.leave_both):
            button.setEnabled(conflict and not busy)
        self.choices.setVisible(bool(self.plan and any(i.action == CONFLICT for i in self.plan.items)))
        self.diff_button.setVisible(self.plan is not None and bool(self.plan.items))
        self.diff_button.setEnabled(len(rows) == 1 and not busy)

    def open_file(self, detected: Detected) -> None:
        """Select the deployment whose local folder holds the file, if any."""
        path = Path(detected.path).resolve()
        name = deployment_for(path, self.store.deployments if self.store else {})
        if name is not None:
            self.select(name)
            return
        self.status.emit(f"Deployment: no deployment maps {path}; add one with “Add…”")
