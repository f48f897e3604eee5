from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from searchtweak.models import ApiToken, Invitation, Membership, Team, User

admin.site.register(User, UserAdmin)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    inlines = [MembershipInline]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["invitee", "team", "role", "created_at", "accepted_at"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "key_prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["key_hash", "key_prefix"]
